//! BERT WordPiece tokenization, configured exactly like transformers' `BertTokenizer` (the Hugging Face
//! `tokenizers` crate does the work): `BertNormalizer` (clean text, split CJK characters, strip accents when
//! lower-casing, lower-case), `BertPreTokenizer`, WordPiece with `##` continuation and `[UNK]` for words over
//! 100 characters, and the `[CLS] A [SEP] B [SEP]` template with token-type ids 0/1. Also builds a vocabulary
//! from a training corpus when a model is trained from scratch, and writes `vocab.txt`, `tokenizer.json`,
//! `tokenizer_config.json` and `special_tokens_map.json` so that transformers' `AutoTokenizer` reads it back.
//! [`basic_tokens`] is the first half alone (no vocabulary): what the validator counts when it has none.

use std::collections::HashMap;
use std::path::Path;

use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::bert::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::utils::parallelism::MaybeParallelIterator;
use tokenizers::utils::truncation::{
    truncate_encodings, TruncationDirection, TruncationParams, TruncationStrategy,
};
use tokenizers::{AddedToken, Encoding, PostProcessor};

use crate::{Error, Result};

/// The special tokens every BERT vocabulary must contain.
pub const SPECIAL_TOKENS: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

/// transformers' default for `max_input_chars_per_word`: longer words become a single `[UNK]`.
const MAX_INPUT_CHARS_PER_WORD: usize = 100;

/// A BERT WordPiece tokenizer; cheap to share between threads (`&self` methods only).
#[derive(Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    /// Tokens in id order; written as `vocab.txt`.
    vocab: Vec<String>,
    /// Whether text is lower-cased (and accents stripped), recorded as `do_lower_case`.
    lowercase: bool,
    pad_id: i64,
    cls_id: i64,
    sep_id: i64,
    mask_id: i64,
    unk_id: i64,
}

/// Per token, its byte range in the encoded text; `None` for the special tokens.
pub type TokenSpans = Vec<Option<(usize, usize)>>;

/// Where a token lies in the text it came from: its byte span, and whether it continues the word of
/// the token before (a `##` piece), which is how entity tags know a word's first piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub start: usize,
    pub end: usize,
    pub continues: bool,
}

/// One encoded example: `[CLS] A [SEP] (B [SEP])`, not padded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    pub input_ids: Vec<i64>,
    /// 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`.
    pub token_type_ids: Vec<i64>,
}

impl Encoded {
    fn of(enc: &Encoding) -> Encoded {
        Encoded {
            input_ids: enc.get_ids().iter().map(|&i| i as i64).collect(),
            token_type_ids: enc.get_type_ids().iter().map(|&i| i as i64).collect(),
        }
    }
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab.len())
            .field("lowercase", &self.lowercase)
            .finish()
    }
}

fn tok_err(context: &str, e: impl std::fmt::Display) -> Error {
    Error::Tokenizer(format!("{context}: {e}"))
}

/// BERT's basic tokenization without a vocabulary: the normalizer (clean text, a token per CJK character,
/// lower-case, strip accents) and the split on whitespace and punctuation — the words WordPiece would then
/// cut into pieces. With any vocabulary a text has at least this many tokens (WordPiece only splits
/// further, or maps a word to one `[UNK]`).
pub fn basic_tokens(text: &str) -> Result<Vec<String>> {
    use tokenizers::{
        NormalizedString, Normalizer, OffsetReferential, OffsetType, PreTokenizedString,
        PreTokenizer,
    };
    let mut normalized = NormalizedString::from(text);
    BertNormalizer::new(true, true, None, true)
        .normalize(&mut normalized)
        .map_err(|e| tok_err("normalize", e))?;
    let mut pre = PreTokenizedString::from(normalized);
    BertPreTokenizer
        .pre_tokenize(&mut pre)
        .map_err(|e| tok_err("pre-tokenize", e))?;
    Ok(pre
        .get_splits(OffsetReferential::Original, OffsetType::Char)
        .into_iter()
        .map(|(word, _, _)| word.to_string())
        .collect())
}

impl Tokenizer {
    /// Loads the tokenizer of a Hugging Face model directory: `vocab.txt` with `tokenizer_config.json`'s
    /// `do_lower_case` (default true), or, without `vocab.txt`, a BERT-style `tokenizer.json`.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let vocab = dir.join("vocab.txt");
        let config = dir.join("tokenizer_config.json");
        let json = dir.join("tokenizer.json");
        if vocab.exists() {
            let mut lowercase = true;
            if config.exists() {
                let text = std::fs::read_to_string(&config).map_err(|e| Error::io(&config, e))?;
                let value: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| tok_err(&config.display().to_string(), e))?;
                if let Some(l) = value.get("do_lower_case").and_then(|v| v.as_bool()) {
                    lowercase = l;
                }
            } else if json.exists() {
                lowercase = lowercase_of_tokenizer_json(&json)?;
            }
            Self::from_vocab_file(&vocab, lowercase)
        } else if json.exists() {
            Self::from_tokenizer_json(&json)
        } else {
            Err(Error::Tokenizer(format!(
                "{} has neither vocab.txt nor tokenizer.json",
                dir.display()
            )))
        }
    }

    /// Reads a `vocab.txt` (one token per line, id = line number).
    pub fn from_vocab_file(path: &Path, lowercase: bool) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        // Trailing whitespace is dropped, as the tokenizers crate's own vocab.txt reader does.
        let vocab: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
        Self::from_vocab(vocab, lowercase).map_err(|e| match e {
            Error::Tokenizer(m) => Error::Tokenizer(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Reads a `tokenizer.json`; only BERT WordPiece tokenizers are accepted, and they are rebuilt with the
    /// canonical configuration so that encoding is identical to a `vocab.txt` load.
    pub fn from_tokenizer_json(path: &Path) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| tok_err(&path.display().to_string(), e))?;
        let lowercase = lowercase_of_tokenizer_json(path)?;
        let mut pairs: Vec<(String, u32)> = inner.get_vocab(false).into_iter().collect();
        pairs.sort_by_key(|p| p.1);
        let vocab: Vec<String> = pairs.into_iter().map(|p| p.0).collect();
        Self::from_vocab(vocab, lowercase)
    }

    /// Builds the tokenizer from tokens in id order.
    pub fn from_vocab(vocab: Vec<String>, lowercase: bool) -> Result<Self> {
        if vocab.is_empty() {
            return Err(Error::Tokenizer("the vocabulary is empty".into()));
        }
        let mut joined = vocab.join("\n");
        joined.push('\n');
        // `read_bytes` is how the tokenizers crate reads vocab.txt: the last id of a duplicated token wins.
        let map = WordPiece::read_bytes(joined.as_bytes()).map_err(|e| tok_err("vocabulary", e))?;
        let id = |t: &str| -> Result<i64> {
            map.get(t).map(|&i| i as i64).ok_or_else(|| {
                Error::Tokenizer(format!("the vocabulary lacks the special token {t}"))
            })
        };
        let (pad_id, unk_id, cls_id, sep_id, mask_id) = (
            id("[PAD]")?,
            id("[UNK]")?,
            id("[CLS]")?,
            id("[SEP]")?,
            id("[MASK]")?,
        );
        let wordpiece = WordPiece::builder()
            .vocab(map)
            .unk_token("[UNK]".into())
            .continuing_subword_prefix("##".into())
            .max_input_chars_per_word(MAX_INPUT_CHARS_PER_WORD)
            .build()
            .map_err(|e| tok_err("wordpiece", e))?;
        let mut builder = TemplateProcessing::builder();
        builder
            .try_single("[CLS]:0 $A:0 [SEP]:0")
            .map_err(|e| tok_err("template", e))?;
        builder
            .try_pair("[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1")
            .map_err(|e| tok_err("template", e))?;
        builder.special_tokens(vec![("[CLS]", cls_id as u32), ("[SEP]", sep_id as u32)]);
        let template = builder.build().map_err(|e| tok_err("template", e))?;
        let mut inner = tokenizers::Tokenizer::new(wordpiece);
        // strip_accents = None: accents are stripped exactly when lower-casing, as in BertTokenizer.
        inner.with_normalizer(Some(BertNormalizer::new(true, true, None, lowercase)));
        inner.with_pre_tokenizer(Some(BertPreTokenizer));
        inner.with_post_processor(Some(template));
        inner.with_decoder(Some(tokenizers::decoders::wordpiece::WordPiece::default()));
        let specials: Vec<AddedToken> = SPECIAL_TOKENS
            .iter()
            .map(|t| AddedToken::from(*t, true).normalized(false))
            .collect();
        inner.add_special_tokens(&specials);
        Ok(Tokenizer {
            inner,
            vocab,
            lowercase,
            pad_id,
            cls_id,
            sep_id,
            mask_id,
            unk_id,
        })
    }

    /// A vocabulary for training from scratch: the special tokens, every character of the corpus (as a word
    /// start and as a `##` continuation where it occurs inside a word), then whole words of two or more
    /// characters that occur at least three times, most frequent first, until `max_vocab` tokens. Characters
    /// beyond `max_vocab` are dropped rarest first (they become `[UNK]`).
    pub fn build_from_corpus<'a>(
        texts: impl Iterator<Item = &'a str>,
        max_vocab: usize,
    ) -> Result<Self> {
        if max_vocab <= SPECIAL_TOKENS.len() {
            return Err(Error::Tokenizer(format!(
                "max_vocab {max_vocab} leaves no room beyond the special tokens"
            )));
        }
        let mut chars: HashMap<String, u64> = HashMap::new();
        let mut words: HashMap<String, u64> = HashMap::new();
        let mut seen_any = false;
        for text in texts {
            for word in basic_tokens(text)? {
                let word = word.as_str();
                seen_any = true;
                for (i, c) in word.chars().enumerate() {
                    let piece = if i == 0 {
                        c.to_string()
                    } else {
                        format!("##{c}")
                    };
                    *chars.entry(piece).or_default() += 1;
                }
                if word.chars().count() >= 2 {
                    *words.entry(word.to_string()).or_default() += 1;
                }
            }
        }
        if !seen_any {
            return Err(Error::Tokenizer(
                "cannot build a vocabulary from an empty corpus".into(),
            ));
        }
        let by_freq = |m: HashMap<String, u64>, min: u64| {
            let mut v: Vec<(String, u64)> = m.into_iter().filter(|p| p.1 >= min).collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.into_iter().map(|p| p.0)
        };
        let mut vocab: Vec<String> = SPECIAL_TOKENS.iter().map(|s| s.to_string()).collect();
        vocab.extend(by_freq(chars, 1).take(max_vocab - vocab.len()));
        let room = max_vocab - vocab.len();
        vocab.extend(by_freq(words, 3).take(room));
        Self::from_vocab(vocab, true)
    }

    /// Encodes one example with `[CLS]`/`[SEP]`, truncated to `max_len` tokens in total (longest-first for
    /// pairs, as transformers' default `truncation=True`).
    pub fn encode(&self, text: &str, pair: Option<&str>, max_len: usize) -> Result<Encoded> {
        let first = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| tok_err("encode", e))?;
        let second = match pair {
            Some(p) => Some(
                self.inner
                    .encode_fast(p, false)
                    .map_err(|e| tok_err("encode", e))?,
            ),
            None => None,
        };
        let enc = self.finish(first, second, max_len)?;
        Ok(Encoded::of(&enc))
    }

    /// Truncates (longest-first) so that the special tokens fit in `max_len`, then adds them: the one
    /// post-processing step of `encode` and `encode_with_offsets`, so both give the same ids.
    fn finish(
        &self,
        first: Encoding,
        second: Option<Encoding>,
        max_len: usize,
    ) -> Result<Encoding> {
        let processor = self
            .inner
            .get_post_processor()
            .expect("post-processor set in from_vocab");
        let added = processor.added_tokens(second.is_some());
        if max_len < added {
            return Err(Error::Tokenizer(format!(
                "max_len {max_len} is shorter than the {added} special tokens"
            )));
        }
        let params = TruncationParams {
            max_length: max_len - added,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        };
        let (first, second) =
            truncate_encodings(first, second, &params).map_err(|e| tok_err("truncate", e))?;
        processor
            .process(first, second, true)
            .map_err(|e| tok_err("template", e))
    }

    /// [`Tokenizer::encode`] of one text that also returns each token's byte span in `text` (`None` for
    /// `[CLS]` and `[SEP]`). Whole-word masking needs the spans to map tokens back onto the words a
    /// segmenter found; the ids are exactly those of `encode`, so pretraining sees what fine-tuning sees.
    pub fn encode_with_offsets(&self, text: &str, max_len: usize) -> Result<(Encoded, TokenSpans)> {
        // `encode` (unlike `encode_fast`) tracks byte offsets into the original text.
        let first = self
            .inner
            .encode(text, false)
            .map_err(|e| tok_err("encode", e))?;
        let enc = self.finish(first, None, max_len)?;
        let spans = enc
            .get_offsets()
            .iter()
            .zip(enc.get_special_tokens_mask())
            .map(|(&span, &special)| (special == 0).then_some(span))
            .collect();
        Ok((Encoded::of(&enc), spans))
    }

    /// [`Tokenizer::encode`] of one text with each token's [`Piece`] (`None` for `[CLS]` and `[SEP]`):
    /// the words are the tokenizer's own (every CJK character one, Latin words and numbers split at
    /// spaces and punctuation), so a word's later pieces are the ones with its word id.
    pub fn encode_pieces(
        &self,
        text: &str,
        max_len: usize,
    ) -> Result<(Encoded, Vec<Option<Piece>>)> {
        let first = self
            .inner
            .encode(text, false)
            .map_err(|e| tok_err("encode", e))?;
        let enc = self.finish(first, None, max_len)?;
        let mut previous_word = None;
        let pieces = enc
            .get_offsets()
            .iter()
            .zip(enc.get_special_tokens_mask())
            .zip(enc.get_word_ids())
            .map(|((&(start, end), &special), &word)| {
                if special != 0 {
                    previous_word = None;
                    return None;
                }
                let continues = word.is_some() && word == previous_word;
                previous_word = word;
                Some(Piece {
                    start,
                    end,
                    continues,
                })
            })
            .collect();
        Ok((Encoded::of(&enc), pieces))
    }

    /// [`Tokenizer::encode`] over many examples, in parallel, results in input order.
    pub fn encode_batch(
        &self,
        items: &[(String, Option<String>)],
        max_len: usize,
    ) -> Result<Vec<Encoded>> {
        items
            .into_maybe_par_iter()
            .map(|(text, pair)| self.encode(text, pair.as_deref(), max_len))
            .collect()
    }

    /// The WordPiece tokens of `text` (no special tokens), for inspection and tests.
    pub fn tokenize(&self, text: &str) -> Result<Vec<String>> {
        // `encode_fast` skips the token strings; the full `encode` keeps them.
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| tok_err("encode", e))?;
        Ok(enc.get_tokens().to_vec())
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// Tokens in id order.
    pub fn vocab(&self) -> &[String] {
        &self.vocab
    }

    pub fn lowercase(&self) -> bool {
        self.lowercase
    }

    pub fn pad_id(&self) -> i64 {
        self.pad_id
    }

    pub fn cls_id(&self) -> i64 {
        self.cls_id
    }

    pub fn sep_id(&self) -> i64 {
        self.sep_id
    }

    pub fn mask_id(&self) -> i64 {
        self.mask_id
    }

    pub fn unk_id(&self) -> i64 {
        self.unk_id
    }

    /// The id of `token`, if it is in the vocabulary.
    pub fn token_to_id(&self, token: &str) -> Option<i64> {
        self.inner.token_to_id(token).map(|i| i as i64)
    }

    /// Writes `vocab.txt`, `tokenizer.json`, `tokenizer_config.json` and `special_tokens_map.json` into `dir`.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let write = |name: &str, text: String| -> Result<()> {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| Error::io(&path, e))
        };
        let mut vocab = self.vocab.join("\n");
        vocab.push('\n');
        write("vocab.txt", vocab)?;
        let json = self
            .inner
            .to_string(true)
            .map_err(|e| tok_err("tokenizer.json", e))?;
        write("tokenizer.json", json)?;
        let config = serde_json::json!({
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": self.lowercase,
            "tokenize_chinese_chars": true,
            "strip_accents": null,
            "do_basic_tokenize": true,
            "never_split": null,
            "unk_token": "[UNK]",
            "sep_token": "[SEP]",
            "pad_token": "[PAD]",
            "cls_token": "[CLS]",
            "mask_token": "[MASK]",
            "clean_up_tokenization_spaces": true,
        });
        write(
            "tokenizer_config.json",
            serde_json::to_string_pretty(&config).expect("static json"),
        )?;
        let specials = serde_json::json!({
            "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
            "mask_token": "[MASK]",
        });
        write(
            "special_tokens_map.json",
            serde_json::to_string_pretty(&specials).expect("static json"),
        )?;
        Ok(())
    }
}

/// `normalizer.lowercase` of a BERT `tokenizer.json` (true when the key is absent, transformers' default).
fn lowercase_of_tokenizer_json(path: &Path) -> Result<bool> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| tok_err(&path.display().to_string(), e))?;
    let normalizer = &value["normalizer"];
    if normalizer["type"] != "BertNormalizer" {
        return Err(Error::Tokenizer(format!(
            "{}: only BERT WordPiece tokenizers are supported (normalizer type {})",
            path.display(),
            normalizer["type"]
        )));
    }
    Ok(normalizer["lowercase"].as_bool().unwrap_or(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Tokenizer {
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "中", "国", "hello", "world", "un",
            "##aff", "##able", "cafe", ",", "!",
        ];
        Tokenizer::from_vocab(vocab.iter().map(|s| s.to_string()).collect(), true).unwrap()
    }

    #[test]
    fn basic_tokens_split_cjk_characters_punctuation_and_spaces() {
        let words = basic_tokens("我爱北京，Hello  World! unaffable\tcafé").unwrap();
        assert_eq!(
            words,
            [
                "我",
                "爱",
                "北",
                "京",
                "，",
                "hello",
                "world",
                "!",
                "unaffable",
                "cafe"
            ]
        );
        assert!(basic_tokens(" \n ").unwrap().is_empty());
        // WordPiece only cuts further: never fewer tokens than the basic split.
        let wordpiece = tiny().tokenize("中国 unaffable, hello!").unwrap();
        assert_eq!(
            wordpiece,
            ["中", "国", "un", "##aff", "##able", ",", "hello", "!"]
        );
        assert!(wordpiece.len() >= basic_tokens("中国 unaffable, hello!").unwrap().len());
    }

    #[test]
    fn encodes_like_bert() {
        let t = tiny();
        assert_eq!(
            t.tokenize("Hello, 中国 Café unaffable!").unwrap(),
            vec!["hello", ",", "中", "国", "cafe", "un", "##aff", "##able", "!"]
        );
        let e = t.encode("中国", Some("hello world"), 16).unwrap();
        assert_eq!(e.input_ids, vec![2, 5, 6, 3, 7, 8, 3]);
        assert_eq!(e.token_type_ids, vec![0, 0, 0, 0, 1, 1, 1]);
        assert_eq!(
            t.encode("中国 xyz [MASK]", None, 16).unwrap().input_ids,
            vec![2, 5, 6, 1, 4, 3]
        );
        let long = "中".repeat(20);
        let e = t.encode(&long, Some("国国国"), 10).unwrap();
        assert_eq!(e.input_ids.len(), 10);
    }

    #[test]
    fn vocab_from_corpus_covers_its_characters() {
        let corpus = ["今天天气很好 good good good", "天气不好 good"];
        let t = Tokenizer::build_from_corpus(corpus.iter().copied(), 100).unwrap();
        assert_eq!(&t.vocab()[..5], &SPECIAL_TOKENS.map(String::from));
        assert!(t.token_to_id("good").is_some());
        let e = t.encode("今天很好", None, 10).unwrap();
        assert!(!e.input_ids.contains(&t.unk_id()));
        assert!(Tokenizer::build_from_corpus(std::iter::empty(), 100).is_err());
    }

    #[test]
    fn offsets_point_into_the_text_and_ids_match_encode() {
        let t = tiny();
        let text = "Hello, 中国 unaffable!";
        let (e, spans) = t.encode_with_offsets(text, 32).unwrap();
        assert_eq!(e, t.encode(text, None, 32).unwrap());
        assert_eq!(spans.first(), Some(&None));
        assert_eq!(spans.last(), Some(&None));
        let pieces: Vec<&str> = spans.iter().flatten().map(|&(a, b)| &text[a..b]).collect();
        assert_eq!(pieces, ["Hello", ",", "中", "国", "un", "aff", "able", "!"]);
        let (short, spans) = t.encode_with_offsets(text, 4).unwrap();
        assert_eq!(short.input_ids.len(), 4);
        assert_eq!(spans.len(), 4);
    }

    #[test]
    fn save_and_reload_is_identical() {
        let t = tiny();
        let dir = tempfile::tempdir().unwrap();
        t.save(dir.path()).unwrap();
        let again = Tokenizer::from_dir(dir.path()).unwrap();
        assert_eq!(again.vocab(), t.vocab());
        let json = Tokenizer::from_tokenizer_json(&dir.path().join("tokenizer.json")).unwrap();
        let text = "Hello 中国 unaffable";
        assert_eq!(
            json.encode(text, None, 32).unwrap(),
            t.encode(text, None, 32).unwrap()
        );
    }
}
