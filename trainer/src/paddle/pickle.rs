//! A reader for the one kind of pickle a Paddle model's weights come in (`model_state.pdparams`, as
//! `paddle.save` writes it): a dict, or an `OrderedDict`, from parameter names to numpy arrays, beside
//! Paddle's own `…@@` bookkeeping entries. It is a small pickle machine that knows the opcodes such a file
//! uses and the handful of constructors it names — numpy's array and dtype, `OrderedDict`, and
//! `_codecs.encode` (how protocol 2 writes bytes) — and refuses everything else, by name and byte
//! offset, before anything could run: a pickle is a program, and a file uploaded to a server must not
//! get to choose which functions it calls. Nothing here executes Python or any callable at all; the
//! allowed "calls" are recognised and turned into values.
//!
//! The file is also bounded as data: a pickle can name a value once and use it many times (the memo), so
//! a few kilobytes can describe a structure of exponential size. Values here are shared, not copied
//! (`Rc`), every container knows its nesting depth when it is made (so no container of any kind grows
//! deeper than [`MAX_DEPTH`], and nothing recursive — dropping included — can exhaust the stack), and
//! the bytes that are copied at all (protocol 2's latin-1 text turned into bytes, arrays' data) are
//! counted against a budget of twice the file's size: a state dict writes each array once.

use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

/// Everything that can be wrong with such a file, with where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at byte {offset})")]
pub struct PickleError {
    /// Byte offset of the opcode that was refused or could not be read (0: the file as a whole).
    pub offset: usize,
    pub message: String,
}

/// The element type of an array, as numpy names it (`f4`, `f2`, `u2`, `i8`), in little-endian order once
/// read (a big-endian array is swapped on reading).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dtype {
    /// `f` float, `i` signed, `u` unsigned, `b` boolean.
    pub kind: char,
    /// Bytes per element.
    pub size: usize,
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.kind, self.size)
    }
}

/// One numpy array: its type, its shape (C order) and its bytes, little-endian.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

impl Array {
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the machine holds on its stack. Cloning one is cheap (a memo entry used again is the same value,
/// as in Python), which is what keeps a file that reuses a value many times small in memory.
#[derive(Debug, Clone)]
enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// A float: read past, its value is never needed.
    Float,
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    Tuple(Container<Value>),
    List(Container<Value>),
    Dict(Container<(Value, Value)>),
    /// One of the allowed constructors, before it is applied.
    Global(Global),
    /// `numpy.dtype(...)`, its byte order still to be set by BUILD.
    Dtype {
        kind: char,
        size: usize,
        order: char,
    },
    /// `_reconstruct(ndarray, (0,), b'b')`: an array whose contents BUILD will give.
    EmptyArray,
    Array(Array),
}

/// A tuple's, list's or dict's items, shared, with how deeply containers nest inside it (1: only
/// scalars), known when it is made so that no later walk has to find out.
#[derive(Debug, Clone)]
struct Container<T> {
    depth: usize,
    items: Rc<Vec<T>>,
}

impl<T> Container<T> {
    fn empty() -> Self {
        Container {
            depth: 1,
            items: Rc::new(Vec::new()),
        }
    }
}

impl Value {
    /// How many containers deep it is (0: not a container).
    fn depth(&self) -> usize {
        match self {
            Value::Tuple(c) | Value::List(c) => c.depth,
            Value::Dict(c) => c.depth,
            _ => 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Global {
    Reconstruct,
    Ndarray,
    Dtype,
    OrderedDict,
    Encode,
}

impl Global {
    /// The constructors a state dict needs; anything else a pickle names is refused.
    fn lookup(module: &str, name: &str) -> Option<Global> {
        Some(match (module, name) {
            ("numpy.core.multiarray" | "numpy._core.multiarray", "_reconstruct") => {
                Global::Reconstruct
            }
            ("numpy", "ndarray") => Global::Ndarray,
            ("numpy", "dtype") => Global::Dtype,
            ("collections", "OrderedDict") => Global::OrderedDict,
            ("_codecs", "encode") => Global::Encode,
            _ => return None,
        })
    }
}

/// More nested containers (or open MARKs) than any state dict has: a guard against a file built to
/// exhaust the stack of whatever walks the value.
const MAX_DEPTH: usize = 64;

/// How many bytes the machine may copy, per byte of the file: latin-1 text turned into bytes and arrays'
/// data, each written once in an honest file.
const COPIES_PER_FILE_BYTE: usize = 2;

struct Machine<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Where the opcode being run starts, for errors.
    at: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: BTreeMap<u32, Value>,
    /// Bytes copied so far (see [`COPIES_PER_FILE_BYTE`]).
    copied: usize,
}

/// Reads a pickled state dict: parameter name → array. Entries whose name ends in `@@` (Paddle's
/// bookkeeping, such as `StructuredToParameterName@@`) are skipped; any other value that is not an
/// array is refused with its name.
pub fn load_state_dict(bytes: &[u8]) -> Result<BTreeMap<String, Array>, PickleError> {
    let top = Machine::new(bytes).run()?;
    let fail = |message: String| PickleError { offset: 0, message };
    let Value::Dict(dict) = top else {
        return Err(fail(format!(
            "the file holds {}, not a dict of parameter names to arrays",
            describe(&top)
        )));
    };
    let items = Rc::try_unwrap(dict.items).unwrap_or_else(|shared| (*shared).clone());
    let mut out = BTreeMap::new();
    for (key, value) in items {
        let Value::Str(name) = key else {
            return Err(fail(format!(
                "a key is {}, not a parameter name",
                describe(&key)
            )));
        };
        if &*name == "UnpackBigParamInfor@@" {
            return Err(fail(
                "the file splits large arrays into pieces (paddle.save with protocol 2 or 3 of a \
                 parameter over 4 GiB); save it again with protocol=4"
                    .into(),
            ));
        }
        if name.ends_with("@@") {
            continue;
        }
        match value {
            Value::Array(array) => {
                out.insert(name.to_string(), array);
            }
            other => {
                return Err(fail(format!(
                    "`{name}` is {}, not an array",
                    describe(&other)
                )))
            }
        }
    }
    Ok(out)
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::None => "None",
        Value::Bool(_) => "a boolean",
        Value::Int(_) => "an integer",
        Value::Float => "a float",
        Value::Str(_) => "a string",
        Value::Bytes(_) => "bytes",
        Value::Tuple(_) => "a tuple",
        Value::List(_) => "a list",
        Value::Dict(_) => "a dict",
        Value::Global(_) => "a constructor",
        Value::Dtype { .. } => "a dtype",
        Value::EmptyArray => "an unfinished array",
        Value::Array(_) => "an array",
    }
}

impl<'a> Machine<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Machine {
            bytes,
            pos: 0,
            at: 0,
            stack: Vec::new(),
            marks: Vec::new(),
            memo: BTreeMap::new(),
            copied: 0,
        }
    }

    /// Counts `n` bytes about to be copied against the budget.
    fn copying(&mut self, n: usize) -> Result<(), PickleError> {
        let budget = self.bytes.len().saturating_mul(COPIES_PER_FILE_BYTE);
        match self.copied.checked_add(n).filter(|&total| total <= budget) {
            Some(total) => {
                self.copied = total;
                Ok(())
            }
            None => self.err(format!(
                "the file uses its values more often than a state dict does: its arrays would take \
                 more than {budget} bytes, twice the file's size"
            )),
        }
    }

    /// A container of `items`, refused when it would nest deeper than [`MAX_DEPTH`].
    fn container<T>(&self, items: Vec<T>, depth: usize) -> Result<Container<T>, PickleError> {
        if depth > MAX_DEPTH {
            return self.too_deep();
        }
        Ok(Container {
            depth,
            items: Rc::new(items),
        })
    }

    fn too_deep<T>(&self) -> Result<T, PickleError> {
        self.err(format!(
            "containers nested more than {MAX_DEPTH} deep, which a state dict never is"
        ))
    }

    fn tuple(&self, items: Vec<Value>) -> Result<Value, PickleError> {
        let depth = 1 + items.iter().map(Value::depth).max().unwrap_or(0);
        Ok(Value::Tuple(self.container(items, depth)?))
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, PickleError> {
        Err(PickleError {
            offset: self.at,
            message: message.into(),
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        match self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
        {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => self.err("the file ends in the middle of a value (truncated?)"),
        }
    }

    fn u8(&mut self) -> Result<u8, PickleError> {
        Ok(self.take(1)?[0])
    }

    fn le<const N: usize>(&mut self) -> Result<[u8; N], PickleError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn len(&mut self, width: usize) -> Result<usize, PickleError> {
        let n = match width {
            1 => u64::from(self.u8()?),
            4 => u64::from(u32::from_le_bytes(self.le()?)),
            _ => u64::from_le_bytes(self.le()?),
        };
        // A length beyond the file cannot be honest; refusing it here keeps allocations bounded.
        match usize::try_from(n) {
            Ok(n) if n <= self.bytes.len() - self.pos => Ok(n),
            _ => self.err(format!(
                "a length of {n} bytes runs past the end of the file"
            )),
        }
    }

    fn line(&mut self) -> Result<&'a str, PickleError> {
        let rest = &self.bytes[self.pos..];
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return self.err("a name is not ended by a newline");
        };
        let s = std::str::from_utf8(&rest[..end]).or_else(|_| self.err("a name is not text"))?;
        self.pos += end + 1;
        Ok(s)
    }

    fn text(&mut self, n: usize) -> Result<Rc<str>, PickleError> {
        let raw = self.take(n)?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(Rc::from(s)),
            Err(_) => self.err("a string is not valid UTF-8"),
        }
    }

    fn pop(&mut self) -> Result<Value, PickleError> {
        match self.stack.pop() {
            Some(v) => Ok(v),
            None => self.err("the file pops an empty stack (not a pickle, or a damaged one)"),
        }
    }

    fn top(&mut self) -> Result<&mut Value, PickleError> {
        if self.stack.is_empty() {
            return self.err("the file works on an empty stack (not a pickle, or a damaged one)");
        }
        Ok(self.stack.last_mut().expect("checked above"))
    }

    fn push(&mut self, v: Value) -> Result<(), PickleError> {
        if self.stack.len() > 1 << 20 {
            return self.err("too many values on the stack");
        }
        self.stack.push(v);
        Ok(())
    }

    /// The values pushed since the last MARK, which is removed.
    fn since_mark(&mut self) -> Result<Vec<Value>, PickleError> {
        let Some(mark) = self.marks.pop() else {
            return self.err("a MARK is missing");
        };
        if mark > self.stack.len() {
            return self.err("a MARK points past the stack");
        }
        Ok(self.stack.split_off(mark))
    }

    fn global(&mut self, module: &str, name: &str) -> Result<(), PickleError> {
        match Global::lookup(module, name) {
            Some(g) => self.push(Value::Global(g)),
            None => self.err(format!(
                "the file asks for `{module}.{name}`, which model weights never need; it was not run \
                 (only numpy arrays in a dict are read)"
            )),
        }
    }

    fn run(mut self) -> Result<Value, PickleError> {
        loop {
            self.at = self.pos;
            if self.marks.len() > MAX_DEPTH {
                return self.err(format!(
                    "more than {MAX_DEPTH} MARKs open at once, which a state dict never has"
                ));
            }
            let op = self.u8()?;
            match op {
                0x80 => {
                    let proto = self.u8()?;
                    if proto > 5 {
                        return self
                            .err(format!("pickle protocol {proto} is newer than any known"));
                    }
                }
                // FRAME: a length hint for buffered readers; the bytes follow as usual.
                0x95 => {
                    self.le::<8>()?;
                }
                b'.' => return self.pop(),
                b'(' => self.marks.push(self.stack.len()),
                b'}' => self.push(Value::Dict(Container::empty()))?,
                b']' => self.push(Value::List(Container::empty()))?,
                b')' => self.push(Value::Tuple(Container::empty()))?,
                b't' => {
                    let items = self.since_mark()?;
                    let tuple = self.tuple(items)?;
                    self.push(tuple)?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < n {
                        return self.err("a tuple of more values than the stack holds");
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    let tuple = self.tuple(items)?;
                    self.push(tuple)?;
                }
                b'N' => self.push(Value::None)?,
                0x88 => self.push(Value::Bool(true))?,
                0x89 => self.push(Value::Bool(false))?,
                b'K' => {
                    let v = self.u8()?;
                    self.push(Value::Int(i64::from(v)))?;
                }
                b'M' => {
                    let v = u16::from_le_bytes(self.le()?);
                    self.push(Value::Int(i64::from(v)))?;
                }
                b'J' => {
                    let v = i32::from_le_bytes(self.le()?);
                    self.push(Value::Int(i64::from(v)))?;
                }
                // LONG1: a little-endian two's-complement integer of n bytes (n ≤ 8 here).
                0x8a => {
                    let n = usize::from(self.u8()?);
                    if n > 8 {
                        return self.err("an integer wider than 64 bits");
                    }
                    let raw = self.take(n)?;
                    let mut v: i64 = 0;
                    for (i, b) in raw.iter().enumerate() {
                        v |= i64::from(*b) << (8 * i);
                    }
                    if n > 0 && n < 8 && raw[n - 1] & 0x80 != 0 {
                        v -= 1i64 << (8 * n);
                    }
                    self.push(Value::Int(v))?;
                }
                b'G' => {
                    self.le::<8>()?;
                    self.push(Value::Float)?;
                }
                0x8c => {
                    let n = self.len(1)?;
                    let s = self.text(n)?;
                    self.push(Value::Str(s))?;
                }
                b'X' => {
                    let n = self.len(4)?;
                    let s = self.text(n)?;
                    self.push(Value::Str(s))?;
                }
                0x8d => {
                    let n = self.len(8)?;
                    let s = self.text(n)?;
                    self.push(Value::Str(s))?;
                }
                b'C' | b'B' | 0x8e => {
                    let width = match op {
                        b'C' => 1,
                        b'B' => 4,
                        _ => 8,
                    };
                    let n = self.len(width)?;
                    let raw = Rc::from(self.take(n)?);
                    self.push(Value::Bytes(raw))?;
                }
                // MEMOIZE, BINPUT, LONG_BINPUT: remember the top value.
                0x94 | b'q' | b'r' => {
                    let index = match op {
                        0x94 => self.memo.len() as u32,
                        b'q' => u32::from(self.u8()?),
                        _ => u32::from_le_bytes(self.le()?),
                    };
                    let v = self.top()?.clone();
                    self.memo.insert(index, v);
                }
                b'h' | b'j' => {
                    let index = if op == b'h' {
                        u32::from(self.u8()?)
                    } else {
                        u32::from_le_bytes(self.le()?)
                    };
                    match self.memo.get(&index).cloned() {
                        Some(v) => self.push(v)?,
                        None => return self.err(format!("memo entry {index} was never stored")),
                    }
                }
                b'c' => {
                    let module = self.line()?.to_string();
                    let name = self.line()?.to_string();
                    self.global(&module, &name)?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    match (module, name) {
                        (Value::Str(m), Value::Str(n)) => self.global(&m, &n)?,
                        _ => return self.err("a global named by something other than strings"),
                    }
                }
                b'R' => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    let v = self.apply(callable, args)?;
                    self.push(v)?;
                }
                b'b' => {
                    let state = self.pop()?;
                    let target = self.pop()?;
                    let v = self.build(target, state)?;
                    self.push(v)?;
                }
                b's' => {
                    let value = self.pop()?;
                    let key = self.pop()?;
                    self.insert(vec![key, value])?;
                }
                b'u' => {
                    let items = self.since_mark()?;
                    if items.len() % 2 != 0 {
                        return self.err("SETITEMS with a key but no value");
                    }
                    self.insert(items)?;
                }
                b'a' => {
                    let item = self.pop()?;
                    self.append(vec![item])?;
                }
                b'e' => {
                    let items = self.since_mark()?;
                    self.append(items)?;
                }
                other => {
                    return self.err(format!(
                        "opcode 0x{other:02x} is not one a state dict is written with"
                    ))
                }
            }
        }
    }

    fn insert(&mut self, flat: Vec<Value>) -> Result<(), PickleError> {
        let deepest = flat.iter().map(Value::depth).max().unwrap_or(0);
        let Value::Dict(dict) = self.top()? else {
            return self.err("SETITEM on something that is not a dict");
        };
        let depth = dict.depth.max(deepest + 1);
        if depth <= MAX_DEPTH {
            dict.depth = depth;
            let items = Rc::make_mut(&mut dict.items);
            let mut it = flat.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                items.push((k, v));
            }
            return Ok(());
        }
        self.too_deep()
    }

    fn append(&mut self, values: Vec<Value>) -> Result<(), PickleError> {
        let deepest = values.iter().map(Value::depth).max().unwrap_or(0);
        let Value::List(list) = self.top()? else {
            return self.err("APPEND on something that is not a list");
        };
        let depth = list.depth.max(deepest + 1);
        if depth <= MAX_DEPTH {
            list.depth = depth;
            Rc::make_mut(&mut list.items).extend(values);
            return Ok(());
        }
        self.too_deep()
    }

    /// REDUCE: one of the allowed constructors applied to its arguments, as a value.
    fn apply(&mut self, callable: Value, args: Value) -> Result<Value, PickleError> {
        let Value::Global(g) = callable else {
            return self.err(format!("the file calls {}", describe(&callable)));
        };
        let Value::Tuple(args) = args else {
            return self.err("a call whose arguments are not a tuple");
        };
        match (g, args.items.as_slice()) {
            (Global::OrderedDict, []) => Ok(Value::Dict(Container::empty())),
            (Global::Encode, [Value::Str(s), Value::Str(enc)]) if &**enc == "latin1" => {
                // How protocol 2 writes bytes: each character is one byte.
                self.copying(s.len())?;
                s.chars()
                    .map(|c| u8::try_from(u32::from(c)).ok())
                    .collect::<Option<Rc<[u8]>>>()
                    .map(Value::Bytes)
                    .map_or_else(|| self.err("latin-1 text with a character above 0xFF"), Ok)
            }
            (
                Global::Reconstruct,
                [Value::Global(Global::Ndarray), Value::Tuple(_), Value::Bytes(_)],
            ) => Ok(Value::EmptyArray),
            (Global::Dtype, [Value::Str(code), Value::Bool(_), Value::Bool(_)]) => {
                let (kind, size) = parse_dtype(code).map_or_else(
                    || self.err(format!("dtype `{code}` is not a number type")),
                    Ok,
                )?;
                Ok(Value::Dtype {
                    kind,
                    size,
                    order: '=',
                })
            }
            (g, _) => self.err(format!(
                "{g:?} called with arguments it is never written with"
            )),
        }
    }

    /// BUILD: the state of a dtype (its byte order) or of an array (shape, dtype and bytes).
    fn build(&mut self, target: Value, state: Value) -> Result<Value, PickleError> {
        let Value::Tuple(state) = state else {
            return self.err("an object whose state is not a tuple");
        };
        match (target, state.items.as_slice()) {
            (Value::Dtype { kind, size, .. }, [Value::Int(_), Value::Str(order), ..]) => {
                let order = order.chars().next().unwrap_or('=');
                Ok(Value::Dtype { kind, size, order })
            }
            (
                Value::EmptyArray,
                [Value::Int(_), Value::Tuple(shape), Value::Dtype { kind, size, order }, Value::Bool(fortran), data],
            ) => {
                let shape = shape
                    .items
                    .iter()
                    .map(|d| match d {
                        Value::Int(n) => usize::try_from(*n).ok(),
                        _ => None,
                    })
                    .collect::<Option<Vec<usize>>>()
                    .map_or_else(
                        || self.err("an array shape that is not a tuple of sizes"),
                        Ok,
                    )?;
                let Value::Bytes(data) = data else {
                    return self
                        .err("an array of Python objects (dtype `O`), which weights never are");
                };
                let count = shape
                    .iter()
                    .try_fold(1usize, |n, &d| n.checked_mul(d))
                    .and_then(|n| n.checked_mul(*size));
                if count != Some(data.len()) {
                    return self.err(format!(
                        "an array of shape {shape:?} and type {kind}{size} with {} bytes of data",
                        data.len()
                    ));
                }
                if *fortran && shape.iter().filter(|&&d| d > 1).count() > 1 {
                    return self.err("an array in Fortran order, which paddle.save never writes");
                }
                self.copying(data.len())?;
                let mut data = data.to_vec();
                if *order == '>' && *size > 1 {
                    for element in data.chunks_exact_mut(*size) {
                        element.reverse();
                    }
                }
                Ok(Value::Array(Array {
                    dtype: Dtype {
                        kind: *kind,
                        size: *size,
                    },
                    shape,
                    data,
                }))
            }
            (other, _) => self.err(format!(
                "{} built from a state it never has",
                describe(&other)
            )),
        }
    }
}

/// `f4` (or `<f4`) → ('f', 4): the number types weights come in; anything else is `None`.
fn parse_dtype(code: &str) -> Option<(char, usize)> {
    let code = code.trim_start_matches(['<', '>', '=', '|']);
    let kind = code.chars().next()?;
    let size: usize = code[1..].parse().ok()?;
    let ok = match kind {
        'f' => matches!(size, 2 | 4 | 8),
        'i' | 'u' => matches!(size, 1 | 2 | 4 | 8),
        'b' => size == 1,
        _ => false,
    };
    ok.then_some((kind, size))
}

/// Writes a state dict the way `paddle.save` does (a dict of parameter names to numpy arrays, pickle
/// protocol 4), for export. The arrays are rebuilt by `numpy.core.multiarray._reconstruct`, the name
/// numpy 1 and 2 both answer to, so the file loads on either.
pub fn save_state_dict(state: &BTreeMap<String, Array>) -> Vec<u8> {
    let mut out = vec![0x80, 4, b'}', b'('];
    for (name, array) in state {
        unicode(&mut out, name);
        out.extend_from_slice(b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n");
        // _reconstruct(ndarray, (0,), b'b')
        out.extend_from_slice(&[b'K', 0, 0x85, b'C', 1, b'b', 0x87, b'R']);
        // BUILD with (1, shape, dtype, is_fortran=False, data)
        out.extend_from_slice(&[b'(', b'K', 1, b'(']);
        for &dim in &array.shape {
            int(&mut out, dim as i64);
        }
        out.push(b't');
        out.extend_from_slice(b"cnumpy\ndtype\n");
        unicode(&mut out, &array.dtype.to_string());
        out.extend_from_slice(&[0x89, 0x88, 0x87, b'R']);
        // the dtype's own state: (3, byte order, None, None, None, -1, -1, 0)
        let order = if array.dtype.size == 1 { "|" } else { "<" };
        out.extend_from_slice(&[b'(', b'K', 3]);
        unicode(&mut out, order);
        out.extend_from_slice(b"NNN"); // three None
        int(&mut out, -1);
        int(&mut out, -1);
        out.extend_from_slice(&[b'K', 0, b't', b'b', 0x89]);
        match u32::try_from(array.data.len()) {
            Ok(n) => {
                out.push(b'B');
                out.extend_from_slice(&n.to_le_bytes());
            }
            Err(_) => {
                out.push(0x8e);
                out.extend_from_slice(&(array.data.len() as u64).to_le_bytes());
            }
        }
        out.extend_from_slice(&array.data);
        out.extend_from_slice(b"tb"); // TUPLE, BUILD
    }
    out.extend_from_slice(b"u."); // SETITEMS, STOP
    out
}

fn unicode(out: &mut Vec<u8>, s: &str) {
    match u8::try_from(s.len()) {
        Ok(n) => out.extend_from_slice(&[0x8c, n]),
        Err(_) => {
            out.push(b'X');
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        }
    }
    out.extend_from_slice(s.as_bytes());
}

fn int(out: &mut Vec<u8>, v: i64) {
    match (u8::try_from(v), i32::try_from(v)) {
        (Ok(b), _) => out.extend_from_slice(&[b'K', b]),
        (_, Ok(i)) => {
            out.push(b'J');
            out.extend_from_slice(&i.to_le_bytes());
        }
        _ => {
            // LONG1: a little-endian two's-complement integer of n bytes.
            out.extend_from_slice(&[0x8a, 8]);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by `tests/fixtures/paddle/make_pickles.py` (numpy's own pickling).
    fn fixture(name: &str) -> Vec<u8> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/paddle");
        std::fs::read(format!("{dir}/{name}")).unwrap()
    }

    fn f32s(a: &Array) -> Vec<f32> {
        a.data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn what_is_written_reads_back() {
        let mut state = BTreeMap::new();
        let data: Vec<u8> = (0..24u8).collect();
        let f4 = Dtype { kind: 'f', size: 4 };
        state.insert(
            "ernie.encoder.layers.0.linear1.weight".to_string(),
            Array {
                dtype: f4,
                shape: vec![2, 3],
                data: data.clone(),
            },
        );
        state.insert(
            "x".repeat(300),
            Array {
                dtype: f4,
                shape: vec![70_000, 0],
                data: Vec::new(),
            },
        );
        assert_eq!(load_state_dict(&save_state_dict(&state)).unwrap(), state);
    }

    #[test]
    fn numpy_arrays_in_a_dict_are_read_in_both_protocols() {
        for name in ["state_p2.pickle", "state_p4.pickle"] {
            let dict = load_state_dict(&fixture(name)).unwrap();
            assert_eq!(dict.len(), 4, "{name}: the @@ entry is skipped");
            let w = &dict["ernie.embeddings.word_embeddings.weight"];
            assert_eq!(
                (w.dtype.to_string(), w.shape.clone()),
                ("f4".into(), vec![5, 4])
            );
            assert!((f32s(w)[0] - 0.125_730_22).abs() < 1e-7);
            let c = &dict["classifier.weight"];
            assert!(
                (f32s(c)[1] - 0.903_470_16).abs() < 1e-7,
                "big-endian swapped"
            );
            let b = &dict["ernie.encoder.layers.0.linear1.bias"];
            assert_eq!(
                (b.dtype.to_string(), b.shape.clone(), b.data.len()),
                ("f2".into(), vec![3], 6)
            );
            let s = &dict["scalar_like"];
            assert_eq!(
                (
                    s.shape.len(),
                    i64::from_le_bytes(s.data.clone().try_into().unwrap())
                ),
                (0, 7)
            );
        }
    }

    /// numpy 1 names its array constructor `numpy.core.multiarray`, numpy 2 `numpy._core.multiarray`;
    /// Paddle installs pin either.
    #[test]
    fn numpy_1_names_are_read_too() {
        let mut bytes = fixture("state_p2.pickle");
        let from = b"cnumpy._core.multiarray\n";
        let to = b"cnumpy.core.multiarray\n";
        let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
        bytes.splice(at..at + from.len(), to.iter().copied());
        assert_eq!(load_state_dict(&bytes).unwrap().len(), 4);
    }

    #[test]
    fn a_pickle_that_calls_anything_else_is_refused_and_nothing_runs() {
        // Nothing can run: the machine has no way to call anything; the name is what it refuses.
        let err = load_state_dict(&fixture("calls_system.pickle")).unwrap_err();
        assert!(err.message.contains("`posix.system`"), "{err}");
    }

    #[test]
    fn object_arrays_fortran_order_and_damage_are_refused_with_why() {
        let err = load_state_dict(&fixture("objects.pickle")).unwrap_err();
        assert!(
            err.message.contains("dtype `O8` is not a number type"),
            "{err}"
        );
        let err = load_state_dict(&fixture("fortran.pickle")).unwrap_err();
        assert!(err.message.contains("Fortran"), "{err}");
        let good = fixture("state_p4.pickle");
        for cut in [1, 10, good.len() / 2, good.len() - 1] {
            let err = load_state_dict(&good[..cut]).unwrap_err();
            assert!(!err.message.is_empty(), "cut at {cut}");
        }
        let err = load_state_dict(b"\x80\x04K\x07.").unwrap_err();
        assert!(err.message.contains("not a dict"), "{err}");
        let err = load_state_dict(b"not a pickle at all").unwrap_err();
        assert!(err.message.contains("opcode"), "{err}");
    }

    /// 59 rounds of "the last value, twice, in a tuple" over a 1,000-character string: 10 KB describing
    /// 2^59 strings. Shared values keep it a few kilobytes in memory; it is refused for what it is.
    #[test]
    fn a_memo_doubling_bomb_stays_small_and_is_refused() {
        let mut bomb = vec![0x80, 4, b'X'];
        bomb.extend_from_slice(&1000u32.to_le_bytes());
        bomb.extend(std::iter::repeat_n(b'a', 1000));
        bomb.push(0x94); // MEMOIZE as 0
                         // The last value is on the stack: get it once more from the memo and pair the two.
        for round in 0..59u8 {
            bomb.extend_from_slice(&[b'h', round, 0x86, 0x94]);
        }
        // {"w": the last tuple}
        let file = [&[0x80, 4, b'}', 0x8c, 1, b'w'][..], &bomb[2..], b"s."].concat();
        let err = load_state_dict(&file).unwrap_err();
        assert!(
            err.message.contains("`w` is a tuple, not an array"),
            "{err}"
        );
        let err = load_state_dict(&[bomb.as_slice(), b"."].concat()).unwrap_err();
        assert!(err.message.contains("a tuple, not a dict"), "{err}");
    }

    /// A million nested lists (and dicts, and tuples) in a few megabytes: refused at depth 65, with no
    /// recursion the file controls.
    #[test]
    fn containers_of_every_kind_nest_at_most_max_depth() {
        let n = 1_000_000;
        let lists = [&[0x80, 4][..], &vec![b']'; n], &vec![b'a'; n - 1], b"."].concat();
        let tuples = [&[0x80, 4, b')'][..], &vec![0x85; n], b"."].concat();
        // {0: {0: {…}}}: the stack holds every key and dict until the SETITEMs (the stack's own cap is
        // 2^20 values).
        let n = 400_000;
        let mut dicts = vec![0x80, 4, b'}'];
        for _ in 1..n {
            dicts.extend_from_slice(&[b'K', 0, b'}']);
        }
        dicts.extend(std::iter::repeat_n(b's', n - 1));
        dicts.push(b'.');
        for (kind, file) in [("lists", lists), ("tuples", tuples), ("dicts", dicts)] {
            let err = load_state_dict(&file).unwrap_err();
            assert!(
                err.message.contains("nested more than 64 deep"),
                "{kind}: {err}"
            );
        }
        let marks = [&[0x80, 4][..], &[b'('; 100], b"."].concat();
        let err = load_state_dict(&marks).unwrap_err();
        assert!(err.message.contains("MARKs open"), "{err}");
    }

    /// The same megabyte of bytes named once and used by many arrays, or one string encoded over and
    /// over: copies beyond twice the file's size are refused before they are made.
    #[test]
    fn copies_are_bounded_by_the_files_size() {
        let array = |shape: usize, data: &[u8]| -> Vec<u8> {
            let mut out = b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n".to_vec();
            out.extend_from_slice(&[b'K', 0, 0x85, b'C', 1, b'b', 0x87, b'R', b'(', b'K', 1]);
            out.push(b'J');
            out.extend_from_slice(&i32::try_from(shape).unwrap().to_le_bytes());
            out.extend_from_slice(&[0x85]);
            out.extend_from_slice(b"cnumpy\ndtype\n");
            out.extend_from_slice(&[0x8c, 2, b'u', b'1', 0x89, 0x88, 0x87, b'R']);
            out.extend_from_slice(&[
                b'(', b'K', 3, 0x8c, 1, b'|', b'N', b'N', b'N', b'K', 0, b't', b'b', 0x89,
            ]);
            out.extend_from_slice(data);
            out.extend_from_slice(b"tb");
            out
        };
        let size = 1 << 20;
        let mut bytes = vec![b'B'];
        bytes.extend_from_slice(&u32::try_from(size).unwrap().to_le_bytes());
        bytes.extend(std::iter::repeat_n(7u8, size));
        bytes.push(0x94); // MEMOIZE as 0
        let mut file = vec![0x80, 4, b'}', b'('];
        file.extend_from_slice(&[0x8c, 1, b'a']);
        file.extend_from_slice(&array(size, &bytes));
        for i in 0..5u8 {
            file.extend_from_slice(&[0x8c, 1, b'b' + i]);
            file.extend_from_slice(&array(size, &[b'h', 0]));
        }
        file.extend_from_slice(b"u.");
        let err = load_state_dict(&file).unwrap_err();
        assert!(err.message.contains("twice the file's size"), "{err}");
        // Used twice, it is still within twice the file.
        let cut = file.len() - 2 - 4 * (3 + array(size, &[b'h', 0]).len());
        let twice = [&file[..cut], b"u."].concat();
        assert_eq!(load_state_dict(&twice).unwrap().len(), 2);
    }
}
