//! Build contexts: a sorted set of entries (directories, in-memory files, files on the host, symlinks)
//! written as a deterministic tar — fixed mtime, owner 0:0, explicit modes, no user/group names, sorted
//! paths — and streamed to Docker while it is written. Host files (the runtime layer can be gigabytes of
//! libtorch) are read from disk chunk by chunk on a blocking thread; only [`CHANNEL_CHUNKS`] chunks of
//! [`CHUNK_BYTES`] are ever in memory.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::mpsc;

/// Modification time of every entry (the Unix epoch + 1 s; some tools treat 0 as "unknown"). Fixed so that
/// the same inputs give the same tar bytes.
pub const FIXED_MTIME: u64 = 1;
/// Size of one streamed chunk.
const CHUNK_BYTES: usize = 256 * 1024;
/// Chunks buffered between the tar writer and the HTTP body: bounds memory to ~1 MiB.
const CHANNEL_CHUNKS: usize = 4;

#[derive(Debug, Clone)]
enum Entry {
    Dir { mode: u32 },
    Data { bytes: Bytes, mode: u32 },
    HostFile { path: PathBuf, mode: u32 },
    Symlink { target: String },
}

/// A build context under construction. Paths are relative, `/`-separated, without leading `/`.
#[derive(Debug, Clone, Default)]
pub struct Context {
    entries: BTreeMap<String, Entry>,
    /// uid/gid of entries not owned by root (only meaningful inside archives that `ADD` extracts).
    owners: BTreeMap<String, (u64, u64)>,
}

impl Context {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a directory (and its missing parents, mode 0755).
    pub fn dir(&mut self, path: &str, mode: u32) -> &mut Self {
        self.parents(path);
        self.entries.insert(clean(path), Entry::Dir { mode });
        self
    }

    /// Adds a file with the given contents.
    pub fn data(&mut self, path: &str, bytes: impl Into<Bytes>, mode: u32) -> &mut Self {
        self.parents(path);
        self.entries.insert(
            clean(path),
            Entry::Data {
                bytes: bytes.into(),
                mode,
            },
        );
        self
    }

    /// Adds a file whose contents are read from the host while the tar is streamed.
    pub fn host_file(&mut self, path: &str, source: PathBuf, mode: u32) -> &mut Self {
        self.parents(path);
        self.entries
            .insert(clean(path), Entry::HostFile { path: source, mode });
        self
    }

    /// Adds a symbolic link.
    pub fn symlink(&mut self, path: &str, target: &str) -> &mut Self {
        self.parents(path);
        self.entries.insert(
            clean(path),
            Entry::Symlink {
                target: target.to_string(),
            },
        );
        self
    }

    /// Sets the owner of an entry already added.
    pub fn owner(&mut self, path: &str, uid: u64, gid: u64) -> &mut Self {
        self.owners.insert(clean(path), (uid, gid));
        self
    }

    /// The whole archive in memory, for a small tar nested in a context (see `ADD` in `dockerfile`).
    pub fn to_bytes(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    fn parents(&mut self, path: &str) {
        let path = clean(path);
        let mut prefix = String::new();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            self.entries
                .entry(prefix.clone())
                .or_insert(Entry::Dir { mode: 0o755 });
        }
    }

    /// Writes the whole tar to `out` (used by tests and for small contexts).
    pub fn write_to(&self, out: impl Write) -> io::Result<()> {
        let mut tar = tar::Builder::new(out);
        for (path, entry) in &self.entries {
            let mut header = tar::Header::new_gnu();
            let (uid, gid) = self.owners.get(path).copied().unwrap_or((0, 0));
            header.set_uid(uid);
            header.set_gid(gid);
            header.set_mtime(FIXED_MTIME);
            match entry {
                Entry::Dir { mode } => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(*mode);
                    header.set_size(0);
                    tar.append_data(&mut header, format!("{path}/"), io::empty())?;
                }
                Entry::Data { bytes, mode } => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(*mode);
                    header.set_size(bytes.len() as u64);
                    tar.append_data(&mut header, path, &bytes[..])?;
                }
                Entry::HostFile { path: source, mode } => {
                    let file = std::fs::File::open(source).map_err(|e| {
                        io::Error::new(e.kind(), format!("{}: {e}", source.display()))
                    })?;
                    // The header's size comes from the open file, and exactly that many bytes are copied, so a
                    // file growing meanwhile cannot corrupt the archive.
                    let len = file.metadata()?.len();
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_mode(*mode);
                    header.set_size(len);
                    tar.append_data(
                        &mut header,
                        path,
                        ExactReader {
                            inner: file.take(len),
                            left: len,
                            source,
                        },
                    )?;
                }
                Entry::Symlink { target } => {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.set_mode(0o777);
                    header.set_size(0);
                    tar.append_link(&mut header, path, target)?;
                }
            }
        }
        tar.into_inner()?.flush()
    }

    /// Streams the tar: a blocking thread writes it into a bounded channel that Docker's request body
    /// reads. An I/O error (a host file vanished) ends the stream with that error, which aborts the build.
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, io::Error>> + Send + 'static {
        let (tx, mut rx) = mpsc::channel::<Result<Bytes, io::Error>>(CHANNEL_CHUNKS);
        tokio::task::spawn_blocking(move || {
            let mut writer = ChannelWriter {
                tx: tx.clone(),
                buf: Vec::with_capacity(CHUNK_BYTES),
            };
            let result = self.write_to(&mut writer).and_then(|_| writer.send_buf());
            if let Err(e) = result {
                // The receiver may be gone already (Docker closed the request); nothing more to do then.
                let _ = tx.blocking_send(Err(e));
            }
        });
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}

fn clean(path: &str) -> String {
    path.trim_matches('/').to_string()
}

/// Fails instead of silently padding when a host file is shorter than its header says (truncated while
/// being read).
struct ExactReader<'a, R> {
    inner: R,
    left: u64,
    source: &'a PathBuf,
}

impl<R: Read> Read for ExactReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} shrank while being added to the build context",
                    self.source.display()
                ),
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

struct ChannelWriter {
    tx: mpsc::Sender<Result<Bytes, io::Error>>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    fn send_buf(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(CHUNK_BYTES),
        ));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| {
            io::Error::new(
                io::ErrorKind::BrokenPipe,
                "Docker stopped reading the build context",
            )
        })
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK_BYTES {
            self.send_buf()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn sample(host: PathBuf) -> Context {
        let mut ctx = Context::new();
        ctx.data("Dockerfile", "FROM scratch\n", 0o644)
            .data("rootfs/etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0o644)
            .symlink("rootfs/bin/sh", "busybox")
            .host_file("rootfs/bin/busybox", host, 0o755)
            .dir("rootfs/tmp", 0o1777);
        ctx
    }

    fn tar_bytes(ctx: &Context) -> Vec<u8> {
        let mut out = Vec::new();
        ctx.write_to(&mut out).unwrap();
        out
    }

    #[test]
    fn tar_is_deterministic_sorted_and_normalized() {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("bb");
        std::fs::write(&host, b"binary").unwrap();
        let first = tar_bytes(&sample(host.clone()));
        // Touch the host file: its mtime must not leak into the archive.
        std::fs::write(&host, b"binary").unwrap();
        assert_eq!(first, tar_bytes(&sample(host)));

        let mut archive = tar::Archive::new(&first[..]);
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let entry = entry.unwrap();
            let h = entry.header();
            assert_eq!(
                (h.uid().unwrap(), h.gid().unwrap(), h.mtime().unwrap()),
                (0, 0, FIXED_MTIME)
            );
            assert_eq!(h.username().unwrap(), Some(""));
            seen.push((
                entry.path().unwrap().display().to_string(),
                h.mode().unwrap(),
            ));
        }
        assert_eq!(
            seen,
            [
                ("Dockerfile".to_string(), 0o644),
                ("rootfs/".into(), 0o755),
                ("rootfs/bin/".into(), 0o755),
                ("rootfs/bin/busybox".into(), 0o755),
                ("rootfs/bin/sh".into(), 0o777),
                ("rootfs/etc/".into(), 0o755),
                ("rootfs/etc/passwd".into(), 0o644),
                ("rootfs/tmp/".into(), 0o1777),
            ]
        );
    }

    #[tokio::test]
    async fn streams_large_host_files_in_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("big");
        let big: Vec<u8> = (0..3 * CHUNK_BYTES + 17).map(|i| (i % 251) as u8).collect();
        std::fs::write(&host, &big).unwrap();
        let mut ctx = Context::new();
        ctx.host_file("big", host, 0o644);
        let expected = tar_bytes(&ctx);
        let chunks: Vec<Bytes> = ctx.into_stream().map(|c| c.unwrap()).collect().await;
        assert!(chunks.len() > 3, "{} chunks", chunks.len());
        assert!(chunks.iter().all(|c| c.len() <= 2 * CHUNK_BYTES));
        assert_eq!(chunks.concat(), expected);
    }

    #[tokio::test]
    async fn missing_host_file_ends_the_stream_with_an_error() {
        let mut ctx = Context::new();
        ctx.host_file("gone", PathBuf::from("/nonexistent/paddock-test"), 0o644);
        let items: Vec<Result<Bytes, io::Error>> = ctx.into_stream().collect().await;
        let err = items.into_iter().find_map(Result::err).expect("an error");
        assert!(
            err.to_string().contains("/nonexistent/paddock-test"),
            "{err}"
        );
    }
}
