//! Files beneath a directory that someone else can write.
//!
//! A workspace volume is written by the team's containers: any name in it may be a symbolic link to the
//! server's database, a FIFO that blocks whoever opens it, a device, or a file far larger than promised.
//! Everything the server reads from, writes into or removes in such a tree goes through a [`Dir`]:
//!
//! - a path is a chain of plain names (no `..`, not absolute), and each name is opened relative to the
//!   directory before it with `O_NOFOLLOW`, so a link anywhere on the way is refused rather than
//!   followed, and nothing outside the directory can be reached — however the tree is changed meanwhile,
//!   since every step holds the directory it resolved;
//! - files are opened non-blocking and checked on the open descriptor (`fstat`), so a FIFO, socket or
//!   device is refused without ever blocking, and a regular file larger than the caller's limit is
//!   refused before a byte is read;
//! - removal unlinks links and never descends through them.
//!
//! The walk is done by hand with `openat` rather than `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`:
//! it gives the same guarantee on every kernel and inside seccomp profiles that refuse `openat2`, so one
//! code path is tested everywhere.
//!
//! # Layout
//! One file: [`Dir`] (open, create, read, write, list, remove beneath it) and [`Entry`]; [`Error`] says
//! what was refused and why (a link, a special file, a size); its tests are in `tests.rs`.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Why a path beneath a [`Dir`] was refused or could not be used. Paths in it are relative to the
/// directory, so a message can be shown to the tenant without revealing the server's layout.
#[derive(Debug)]
pub enum Error {
    /// Absolute, empty, or with a `..`: it would name something outside the directory.
    Outside(PathBuf),
    /// A symbolic link where a file or directory was expected.
    Link(PathBuf),
    /// Not what was expected: a FIFO, socket or device where a regular file was, a file where a
    /// directory was, or the other way round.
    Kind {
        path: PathBuf,
        found: &'static str,
    },
    /// A regular file larger than the caller accepts.
    TooLarge {
        path: PathBuf,
        bytes: u64,
        limit: u64,
    },
    /// Nothing by that name.
    Missing(PathBuf),
    /// More entries (or deeper nesting) than a listing accepts.
    TooMany {
        path: PathBuf,
        limit: usize,
    },
    Io {
        path: PathBuf,
        source: io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Outside(p) => write!(f, "`{}` is not a path inside the directory", p.display()),
            Error::Link(p) => write!(
                f,
                "`{}` is a symbolic link, which is not followed",
                p.display()
            ),
            Error::Kind { path, found } => write!(f, "`{}` is {found}", path.display()),
            Error::TooLarge { path, bytes, limit } => write!(
                f,
                "`{}` is {bytes} bytes, more than the {limit} accepted",
                path.display()
            ),
            Error::Missing(p) => write!(f, "`{}` does not exist", p.display()),
            Error::TooMany { path, limit } => {
                write!(f, "`{}` holds more than {limit} entries", path.display())
            }
            Error::Io { path, source } => write!(f, "`{}`: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl Error {
    pub fn is_missing(&self) -> bool {
        matches!(self, Error::Missing(_))
    }

    /// Whether the tree was tampered with (as opposed to the file simply missing or an I/O failure).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Error::Outside(_)
                | Error::Link(_)
                | Error::Kind { .. }
                | Error::TooLarge { .. }
                | Error::TooMany { .. }
        )
    }

    fn from_errno(path: &Path, errno: Errno, wanted: Wanted) -> Error {
        let path = path.to_path_buf();
        match errno {
            // O_NOFOLLOW on a link.
            Errno::LOOP => Error::Link(path),
            Errno::NOENT => Error::Missing(path),
            Errno::NOTDIR => Error::Kind {
                path,
                found: match wanted {
                    Wanted::Dir => "not a directory",
                    // A file on the way to it was not a directory.
                    Wanted::File => "below something that is not a directory",
                },
            },
            Errno::ISDIR => Error::Kind {
                path,
                found: "a directory",
            },
            // O_NONBLOCK | O_WRONLY on a FIFO without a reader; a device without its driver.
            Errno::NXIO | Errno::NODEV => Error::Kind {
                path,
                found: "a FIFO or device",
            },
            other => Error::Io {
                path,
                source: other.into(),
            },
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Clone, Copy)]
enum Wanted {
    File,
    Dir,
}

/// Opens `name` in `parent` as a directory, without following it. `O_DIRECTORY | O_NOFOLLOW` answers
/// a link with ENOTDIR, like a file: which of the two it was is asked of the name itself.
fn open_dir_at(parent: impl AsFd, name: &OsStr, shown: &Path) -> Result<OwnedFd> {
    rustix::fs::openat(&parent, name, DIR_FLAGS, Mode::empty()).map_err(|e| {
        let link = e == Errno::NOTDIR
            && rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
        if link {
            Error::Link(shown.to_path_buf())
        } else {
            Error::from_errno(shown, e, Wanted::Dir)
        }
    })
}

/// The names of a relative path, each a plain name; `.` is skipped, anything else refused.
fn names(rel: &Path) -> Result<Vec<&OsStr>> {
    let mut out = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Error::Outside(rel.to_path_buf()))
            }
        }
    }
    Ok(out)
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Unknown => "of an unknown kind",
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// A directory held open; every path given to its methods is resolved beneath it, one name at a time,
/// without following links.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
}

/// A regular file found by [`Dir::files`]: its path relative to the listed directory, open for reading.
#[derive(Debug)]
pub struct Entry {
    pub path: PathBuf,
    pub file: File,
    pub bytes: u64,
    /// Permission bits, for an archive's headers.
    pub mode: u32,
    /// Seconds since the epoch.
    pub modified: i64,
}

/// The open directory, for calls that take a descriptor: `fchown`, `fchdir` before a child's `exec`.
impl AsFd for Dir {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Dir {
    /// Sets the permission bits of this directory (on the descriptor: no path is resolved again).
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        rustix::fs::fchmod(&self.fd, Mode::from_raw_mode(mode)).map_err(Into::into)
    }

    /// Opens a directory the caller trusts the path of (the server made it); only its last name is
    /// checked not to be a link.
    pub fn open(path: &Path) -> Result<Dir> {
        rustix::fs::open(path, DIR_FLAGS, Mode::empty())
            .map(|fd| Dir { fd })
            .map_err(|e| Error::from_errno(path, e, Wanted::Dir))
    }

    /// Like [`Dir::open`], creating the directory and its parents (0o755 before the umask) first.
    pub fn create(path: &Path) -> Result<Dir> {
        std::fs::create_dir_all(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Dir::open(path)
    }

    /// The directory at `rel`.
    pub fn open_dir(&self, rel: &Path) -> Result<Dir> {
        let mut current: Option<OwnedFd> = None;
        for name in names(rel)? {
            let parent = current.as_ref().map_or(self.fd.as_fd(), |fd| fd.as_fd());
            current = Some(open_dir_at(parent, name, rel)?);
        }
        match current {
            Some(fd) => Ok(Dir { fd }),
            None => self.try_clone(),
        }
    }

    /// The directory at `rel`, made (with `mode`, before the umask) where missing.
    pub fn create_dir_all(&self, rel: &Path, mode: u32) -> Result<Dir> {
        let mut current = self.try_clone()?;
        for name in names(rel)? {
            match rustix::fs::mkdirat(&current.fd, name, Mode::from_raw_mode(mode)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(Error::from_errno(rel, e, Wanted::Dir)),
            }
            current = Dir {
                fd: open_dir_at(&current.fd, name, rel)?,
            };
        }
        Ok(current)
    }

    fn try_clone(&self) -> Result<Dir> {
        self.fd
            .try_clone()
            .map(|fd| Dir { fd })
            .map_err(|source| Error::Io {
                path: PathBuf::from("."),
                source,
            })
    }

    /// The directory holding the last name of `rel`, and that name.
    fn parent_of<'p>(&self, rel: &'p Path) -> Result<(Dir, &'p OsStr)> {
        let mut all = names(rel)?;
        let last = all.pop().ok_or_else(|| Error::Outside(rel.to_path_buf()))?;
        let parent: PathBuf = all.iter().collect();
        Ok((self.open_dir(&parent)?, last))
    }

    /// A regular file at `rel` of at most `limit` bytes, open for reading.
    pub fn open_file(&self, rel: &Path, limit: u64) -> Result<File> {
        let (parent, name) = self.parent_of(rel)?;
        let fd = rustix::fs::openat(
            &parent.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::from_errno(rel, e, Wanted::File))?;
        let bytes = regular_size(&fd, rel)?;
        if bytes > limit {
            return Err(Error::TooLarge {
                path: rel.to_path_buf(),
                bytes,
                limit,
            });
        }
        Ok(File::from(fd))
    }

    /// The whole of a regular file of at most `limit` bytes.
    pub fn read(&self, rel: &Path, limit: u64) -> Result<Vec<u8>> {
        let mut file = self.open_file(rel, limit)?;
        let mut buf = Vec::new();
        // The file may grow after the check: never read more than the limit.
        file.by_ref()
            .take(limit)
            .read_to_end(&mut buf)
            .map_err(|source| Error::Io {
                path: rel.to_path_buf(),
                source,
            })?;
        Ok(buf)
    }

    /// Up to `max` bytes of a regular file (of any size) from byte `offset`: for files a process appends
    /// to while the server reads on from where it stopped.
    pub fn read_from(&self, rel: &Path, offset: u64, max: u64) -> Result<Vec<u8>> {
        let mut file = self.open_file(rel, u64::MAX)?;
        let io = |source| Error::Io {
            path: rel.to_path_buf(),
            source,
        };
        file.seek(SeekFrom::Start(offset)).map_err(io)?;
        let mut buf = Vec::new();
        file.take(max).read_to_end(&mut buf).map_err(io)?;
        Ok(buf)
    }

    /// The last `max` bytes (or fewer) of a regular file of any size: for the end of a log.
    pub fn read_tail(&self, rel: &Path, max: u64) -> Result<Vec<u8>> {
        let mut file = self.open_file(rel, u64::MAX)?;
        let io = |source| Error::Io {
            path: rel.to_path_buf(),
            source,
        };
        let bytes = file.metadata().map_err(io)?.len();
        file.seek(SeekFrom::Start(bytes.saturating_sub(max)))
            .map_err(io)?;
        let mut buf = Vec::new();
        file.take(max).read_to_end(&mut buf).map_err(io)?;
        Ok(buf)
    }

    /// Whether anything (of any kind, links included) is at `rel`; a link on the way is an error.
    pub fn exists(&self, rel: &Path) -> Result<bool> {
        let (parent, name) = match self.parent_of(rel) {
            Ok(found) => found,
            Err(Error::Missing(_)) => return Ok(false),
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&parent.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(Error::from_errno(rel, e, Wanted::File)),
        }
    }

    /// Creates the regular file at `rel` for writing, with `mode` before the umask. Whatever was there
    /// (a file, a link, a FIFO) is unlinked first and the file made anew, so nothing is written through
    /// a link or into an inode that is also reachable elsewhere; a directory there is refused.
    pub fn create_file(&self, rel: &Path, mode: u32) -> Result<File> {
        let (parent, name) = self.parent_of(rel)?;
        match rustix::fs::unlinkat(&parent.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => return Err(Error::from_errno(rel, e, Wanted::File)),
        }
        let fd = rustix::fs::openat(
            &parent.fd,
            name,
            OFlags::WRONLY
                | OFlags::CREATE
                | OFlags::EXCL
                | OFlags::NOFOLLOW
                | OFlags::NOCTTY
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map_err(|e| match e {
            // Made again by someone else between the unlink and the open.
            Errno::EXIST => Error::Kind {
                path: rel.to_path_buf(),
                found: "being replaced by someone else",
            },
            e => Error::from_errno(rel, e, Wanted::File),
        })?;
        Ok(File::from(fd))
    }

    /// Writes `bytes` as the regular file `rel` (see [`Dir::create_file`]).
    pub fn write(&self, rel: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        use std::io::Write;
        let mut file = self.create_file(rel, mode)?;
        file.write_all(bytes).map_err(|source| Error::Io {
            path: rel.to_path_buf(),
            source,
        })
    }

    /// Moves `from` (a path the caller trusts, on the same file system) to `rel` beneath this directory,
    /// replacing nothing: a name already there, link or not, is an error.
    pub fn move_in(&self, from: &Path, rel: &Path) -> Result<()> {
        let (parent, name) = self.parent_of(rel)?;
        rustix::fs::renameat_with(
            rustix::fs::CWD,
            from,
            &parent.fd,
            name,
            rustix::fs::RenameFlags::NOREPLACE,
        )
        .map_err(|e| match e {
            Errno::EXIST => Error::Kind {
                path: rel.to_path_buf(),
                found: "already there",
            },
            e => Error::from_errno(rel, e, Wanted::File),
        })
    }

    /// Removes whatever is at `rel`: a file, a link (not what it points to), or a directory and
    /// everything beneath it, never descending through a link. Nothing there is not an error.
    pub fn remove_all(&self, rel: &Path) -> Result<()> {
        let (parent, name) = match self.parent_of(rel) {
            Ok(found) => found,
            Err(Error::Missing(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        parent.remove_entry(name, rel)
    }

    fn remove_entry(&self, name: &OsStr, shown: &Path) -> Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => return Ok(()),
            Err(Errno::ISDIR) => {}
            Err(e) => return Err(Error::from_errno(shown, e, Wanted::File)),
        }
        // A directory (opened without following: a link swapped in meanwhile is refused).
        let child = match open_dir_at(&self.fd, name, shown) {
            Ok(fd) => Dir { fd },
            Err(Error::Missing(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry_name in child.names(shown)? {
            child.remove_entry(&entry_name, &shown.join(&entry_name))?;
        }
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(Error::from_errno(shown, e, Wanted::Dir)),
        }
    }

    /// The names in this directory (without `.` and `..`).
    fn names(&self, shown: &Path) -> Result<Vec<OsString>> {
        let io = |e: Errno| Error::Io {
            path: shown.to_path_buf(),
            source: e.into(),
        };
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                out.push(OsStr::from_bytes(name).to_os_string());
            }
        }
        Ok(out)
    }

    /// Every regular file beneath this directory, open, sorted by path; directories are descended, and
    /// anything else — a link, a FIFO, a socket, a device — refuses the whole listing, as do more than
    /// `max_entries` entries.
    pub fn files(&self, max_entries: usize) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        let mut seen = 0usize;
        self.collect(Path::new(""), max_entries, &mut seen, &mut out)?;
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    fn collect(
        &self,
        prefix: &Path,
        max_entries: usize,
        seen: &mut usize,
        out: &mut Vec<Entry>,
    ) -> Result<()> {
        let mut names = self.names(prefix)?;
        names.sort();
        for name in names {
            *seen += 1;
            if *seen > max_entries {
                return Err(Error::TooMany {
                    path: prefix.to_path_buf(),
                    limit: max_entries,
                });
            }
            let path = prefix.join(&name);
            let stat = rustix::fs::statat(&self.fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| Error::from_errno(&path, e, Wanted::File))?;
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::Directory => {
                    let child = self
                        .open_dir(Path::new(&name))
                        .map_err(|e| relocate(e, &path))?;
                    child.collect(&path, max_entries, seen, out)?;
                }
                FileType::RegularFile => {
                    let file = self
                        .open_file(Path::new(&name), u64::MAX)
                        .map_err(|e| relocate(e, &path))?;
                    let stat = rustix::fs::fstat(&file).map_err(|e| Error::Io {
                        path: path.clone(),
                        source: e.into(),
                    })?;
                    out.push(Entry {
                        path,
                        file,
                        bytes: stat.st_size as u64,
                        mode: stat.st_mode & 0o7777,
                        modified: stat.st_mtime as i64,
                    });
                }
                FileType::Symlink => return Err(Error::Link(path)),
                other => {
                    return Err(Error::Kind {
                        path,
                        found: kind_name(other),
                    })
                }
            }
        }
        Ok(())
    }
}

/// An error about a name inside a listed directory, restated with its path from the listing's root.
fn relocate(e: Error, path: &Path) -> Error {
    let path = path.to_path_buf();
    match e {
        Error::Outside(_) => Error::Outside(path),
        Error::Link(_) => Error::Link(path),
        Error::Kind { found, .. } => Error::Kind { path, found },
        Error::TooLarge { bytes, limit, .. } => Error::TooLarge { path, bytes, limit },
        Error::Missing(_) => Error::Missing(path),
        Error::TooMany { limit, .. } => Error::TooMany { path, limit },
        Error::Io { source, .. } => Error::Io { path, source },
    }
}

/// The size of an open regular file; anything else is refused.
fn regular_size(fd: &OwnedFd, rel: &Path) -> Result<u64> {
    let stat = rustix::fs::fstat(fd).map_err(|e| Error::Io {
        path: rel.to_path_buf(),
        source: e.into(),
    })?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok(stat.st_size as u64),
        other => Err(Error::Kind {
            path: rel.to_path_buf(),
            found: kind_name(other),
        }),
    }
}

#[cfg(test)]
mod tests;
