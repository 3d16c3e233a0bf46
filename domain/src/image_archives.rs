//! What an image archive (`docker save`) may hold, counted while it streams to the engine.
//!
//! Docker unpacks an archive's outer tar to a scratch folder before it loads anything, then applies each
//! layer (a tar, possibly gzip-compressed) to its store. A small upload can therefore become millions of
//! files or a gzip bomb on the engine's disk. The engine only sees the end of the upload after
//! [`inspect`] has read it all and found it within [`Caps`] (`Engine::load_images` holds the body's end
//! back until then), so an archive over a cap is never loaded: the request is cut and Docker drops what it
//! had.

use std::cell::Cell;
use std::io::{self, Read};
use std::rc::Rc;

use bytes::{Buf, Bytes};

/// The limits of one archive. The defaults take any real image (a CUDA devel image with a framework is
/// a few hundred thousand files and a few tens of GB) and stop archives built to exhaust the engine.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Entries of the outer tar: a `docker save` of N images with L layers has about 3L + N + 2.
    pub outer_entries: u64,
    /// Entries of all layers together.
    pub layer_entries: u64,
    /// Names in one path, outer or inside a layer.
    pub depth: usize,
    /// Bytes the layers unpack to, at most this many times the archive's bytes read so far…
    pub expansion: u64,
    /// …plus this much (a small image may hold one file of zeros).
    pub expansion_slack: u64,
}

impl Caps {
    pub const DEFAULT: Caps = Caps {
        outer_entries: 10_000,
        layer_entries: 4_000_000,
        depth: 128,
        expansion: 20,
        expansion_slack: 1 << 30,
    };
}

/// What was read, for the log.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub outer_entries: u64,
    pub layers: u64,
    pub layer_entries: u64,
    /// Bytes the layers unpack to (their tar streams, after decompression).
    pub layer_bytes: u64,
}

/// Reads a whole archive and says why it is refused, in words that name the cap and the entry.
pub fn inspect(archive: impl Read, caps: &Caps) -> Result<Summary, String> {
    let read = Rc::new(Cell::new(0u64));
    let mut outer = tar::Archive::new(Counted {
        inner: archive,
        read: read.clone(),
    });
    let not_tar = |e: io::Error| format!("it is not a tar archive ({e})");
    let mut summary = Summary::default();
    for entry in outer.entries().map_err(not_tar)? {
        let mut entry = entry.map_err(not_tar)?;
        summary.outer_entries += 1;
        if summary.outer_entries > caps.outer_entries {
            return Err(format!(
                "it holds more than {} entries, more than `docker save` writes",
                caps.outer_entries
            ));
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        within_depth(&name, caps)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let mut head = Vec::with_capacity(512);
        (&mut entry)
            .take(512)
            .read_to_end(&mut head)
            .map_err(|e| format!("`{name}` could not be read ({e})"))?;
        let kind = Kind::of(&head);
        let whole = Read::chain(head.as_slice(), &mut entry);
        let mut layer = Layer {
            name: &name,
            summary: &mut summary,
            caps,
            archive_read: &read,
        };
        match kind {
            Kind::Other => {}
            Kind::Zstd => {
                return Err(format!(
                    "the layer `{name}` is compressed with zstd, which Paddock cannot count before \
                     Docker unpacks it; save the image with plain or gzip-compressed layers"
                ))
            }
            Kind::Tar => layer.read(whole)?,
            Kind::Gzip => layer.read(flate2::read::MultiGzDecoder::new(whole))?,
        }
    }
    Ok(summary)
}

/// What an outer entry's first bytes say it is.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Tar,
    Gzip,
    Zstd,
    /// JSON (manifests, image configs) or anything Docker does not unpack.
    Other,
}

impl Kind {
    fn of(head: &[u8]) -> Kind {
        if head.starts_with(&[0x1f, 0x8b]) {
            Kind::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Kind::Zstd
        } else if head.len() >= 262 && &head[257..262] == b"ustar" {
            Kind::Tar
        } else {
            Kind::Other
        }
    }
}

/// One layer being counted, against the whole archive's totals.
struct Layer<'a> {
    name: &'a str,
    summary: &'a mut Summary,
    caps: &'a Caps,
    archive_read: &'a Rc<Cell<u64>>,
}

impl Layer<'_> {
    /// Walks the layer's tar, then reads its stream to the end as Docker would, counting every byte it
    /// unpacks to.
    fn read(&mut self, stream: impl Read) -> Result<(), String> {
        let name = self.name;
        self.summary.layers += 1;
        let unpacked = Rc::new(Cell::new(0u64));
        let budget = self.summary.layer_bytes;
        let caps = *self.caps;
        let archive_read = self.archive_read.clone();
        let over = Rc::new(Cell::new(false));
        let guarded = Guarded {
            inner: stream,
            unpacked: unpacked.clone(),
            over: over.clone(),
            allowed: move |n: u64| {
                budget + n
                    <= archive_read
                        .get()
                        .saturating_mul(caps.expansion)
                        .saturating_add(caps.expansion_slack)
            },
        };
        let expanded = || {
            format!(
                "the layer `{name}` unpacks to more than {} times the archive's size",
                caps.expansion
            )
        };
        let mut tar = tar::Archive::new(guarded);
        let broken = |e: io::Error| {
            if over.get() {
                expanded()
            } else {
                format!("the layer `{name}` is not a tar archive ({e})")
            }
        };
        for entry in tar.entries().map_err(broken)? {
            let entry = entry.map_err(broken)?;
            self.summary.layer_entries += 1;
            if self.summary.layer_entries > caps.layer_entries {
                return Err(format!(
                    "its layers hold more than {} files and folders",
                    caps.layer_entries
                ));
            }
            within_depth(&String::from_utf8_lossy(&entry.path_bytes()), &caps)?;
        }
        io::copy(&mut tar.into_inner(), &mut io::sink()).map_err(broken)?;
        self.summary.layer_bytes += unpacked.get();
        Ok(())
    }
}

fn within_depth(path: &str, caps: &Caps) -> Result<(), String> {
    let names = path
        .split('/')
        .filter(|n| !n.is_empty() && *n != ".")
        .count();
    if names > caps.depth {
        let start: String = path.chars().take(60).collect();
        return Err(format!(
            "the path `{start}…` has more than {} names",
            caps.depth
        ));
    }
    Ok(())
}

/// Counts the archive's bytes as they are read.
struct Counted<R> {
    inner: R,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// Counts what a layer unpacks to and stops at the first byte past what `allowed` grants.
struct Guarded<R, F> {
    inner: R,
    unpacked: Rc<Cell<u64>>,
    over: Rc<Cell<bool>>,
    allowed: F,
}

impl<R: Read, F: Fn(u64) -> bool> Read for Guarded<R, F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.unpacked.get() + n as u64;
        if !(self.allowed)(total) {
            self.over.set(true);
            return Err(io::Error::other("over the expansion cap"));
        }
        self.unpacked.set(total);
        Ok(n)
    }
}

/// The blocking side of a channel of chunks, for [`inspect`] on a blocking thread while the same chunks
/// go to the engine.
pub struct ChunkReader {
    chunks: tokio::sync::mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl ChunkReader {
    pub fn new(chunks: tokio::sync::mpsc::Receiver<Bytes>) -> Self {
        ChunkReader {
            chunks,
            current: Bytes::new(),
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current.advance(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, *data).unwrap();
        }
        builder.into_inner().unwrap()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    }

    fn image(layer: &[u8]) -> Vec<u8> {
        tar_of(&[
            ("manifest.json", br#"[{"Layers":["abc/layer.tar"]}]"#),
            ("abc/layer.tar", layer),
        ])
    }

    #[test]
    fn a_saved_image_passes_with_its_layers_counted() {
        let layer = tar_of(&[
            ("bin/sh", b"#!"),
            ("etc/passwd", b"root:x:0:0::/:/bin/sh\n"),
        ]);
        for (layer, name) in [(layer.clone(), "plain"), (gzip(&layer), "gzip")] {
            let summary = inspect(&image(&layer)[..], &Caps::DEFAULT).unwrap();
            assert_eq!(
                (summary.outer_entries, summary.layers, summary.layer_entries),
                (2, 1, 2),
                "{name}"
            );
            assert_eq!(summary.layer_bytes, layer_len(&layer), "{name}");
        }
    }

    fn layer_len(layer: &[u8]) -> u64 {
        let mut out = Vec::new();
        if layer.starts_with(&[0x1f, 0x8b]) {
            flate2::read::MultiGzDecoder::new(layer)
                .read_to_end(&mut out)
                .unwrap();
            out.len() as u64
        } else {
            layer.len() as u64
        }
    }

    #[test]
    fn each_cap_is_refused_with_its_value() {
        let small = Caps {
            outer_entries: 3,
            layer_entries: 3,
            depth: 4,
            expansion: 2,
            expansion_slack: 0,
        };
        let many_outer: Vec<(String, &[u8])> =
            (0..4).map(|i| (format!("f{i}"), &b"{}"[..])).collect();
        let many_outer: Vec<(&str, &[u8])> =
            many_outer.iter().map(|(n, d)| (n.as_str(), *d)).collect();
        let many_inner = image(&tar_of(&[("a", b""), ("b", b""), ("c", b""), ("d", b"")]));
        let deep_outer = tar_of(&[("a/b/c/d/e", b"{}")]);
        let deep_inner = image(&tar_of(&[("a/b/c/d/e", b"")]));
        let bomb = image(&gzip(&tar_of(&[("zeros", &vec![0u8; 1 << 20])])));
        let zstd = image(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]);
        let broken = image(&gzip(b"not a tar at all, but compressed"));
        for (archive, why) in [
            (tar_of(&many_outer), "more than 3 entries"),
            (many_inner, "more than 3 files and folders"),
            (deep_outer, "has more than 4 names"),
            (deep_inner, "has more than 4 names"),
            (bomb, "unpacks to more than 2 times the archive's size"),
            (zstd, "compressed with zstd"),
            (broken, "is not a tar archive"),
            (b"plain words".to_vec(), "it is not a tar archive"),
        ] {
            let refused = inspect(&archive[..], &small).unwrap_err();
            assert!(refused.contains(why), "{why}: {refused}");
        }
        // The bomb is within the defaults' slack: a small image may hold a file of zeros.
        let bomb = image(&gzip(&tar_of(&[("zeros", &vec![0u8; 1 << 20])])));
        assert!(inspect(&bomb[..], &Caps::DEFAULT).is_ok());
    }

    #[test]
    fn the_chunk_reader_gives_every_byte_in_order_then_ends() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let sender = std::thread::spawn(move || {
            for chunk in [&b"ab"[..], b"", b"cde", b"f"] {
                tx.blocking_send(Bytes::copy_from_slice(chunk)).unwrap();
            }
        });
        let mut all = String::new();
        ChunkReader::new(rx).read_to_string(&mut all).unwrap();
        sender.join().unwrap();
        assert_eq!(all, "abcdef");
    }
}
