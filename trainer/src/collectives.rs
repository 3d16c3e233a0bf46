//! Collectives across training processes (ranks), on libtorch's own c10d layer with its Gloo backend
//! (`csrc/collectives.cpp`): what data-parallel training needs to keep ranks in step — the same start
//! (broadcast), the same gradients (all-reduce), the same moment (barrier). Writing our own all-reduce
//! would be a toy beside the one PyTorch's DDP runs on.
//!
//! Every collective is bounded by the group's timeout: when a rank dies or never comes, the others fail
//! with the reason instead of waiting for ever, so a job fails instead of hanging.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::time::Duration;

use tch::Tensor;

use crate::error::{Error, Result};

/// Where the ranks of one run meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meeting {
    /// A TCP store served by rank 0 at `host:port`, which every rank can reach; Gloo's connections
    /// between ranks go out from the interface `host` names.
    Tcp { host: String, port: u16 },
    /// A file every rank opens: no port to pick; for the ranks of one machine, or of several that
    /// share a file system with working locks (a cluster's shared directory).
    File(PathBuf),
}

/// Which of this machine's addresses Gloo's connections to the other ranks go out from and listen on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// The loopback interface: every rank is on this machine.
    Loopback,
    /// The address a name resolves to: `MASTER_ADDR`, when every rank is on this machine.
    Host(String),
    /// A network interface by name (`GLOO_SOCKET_IFNAME`, as PyTorch reads it): the admin's choice
    /// where the hostname resolves to an address the other machines cannot reach.
    Interface(String),
    /// The address this machine's hostname resolves to (PyTorch's default): ranks on several machines.
    Hostname,
}

/// This process's place in a run of several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rank {
    pub rank: usize,
    pub world: usize,
    pub meeting: Meeting,
    pub link: Link,
    /// The longest any collective, and the meeting, may take — but that Gloo's first connection to a
    /// peer whose address is known waits up to five times as long (a rank that died after saying where
    /// it listens): whoever started the ranks stops the rest when one dies.
    pub timeout: Duration,
}

/// What a run whose ranks give no timeout waits for a collective: long enough for rank 0 to write a
/// large checkpoint while the others wait at the next step, short enough that a lost rank ends the
/// job within minutes (a rank that exits is noticed at once: its connections close).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

impl Rank {
    /// This process's place, from the variables torchrun sets (and Paddock's executors set alike):
    /// `WORLD_SIZE` and `RANK`; `MASTER_ADDR` and `MASTER_PORT` (29500 if unset) where rank 0 serves
    /// the meeting, or `PADDOCK_MEETING_FILE`, a file all ranks see; `PADDOCK_COLLECTIVE_TIMEOUT_SECS`;
    /// `LOCAL_WORLD_SIZE` (the ranks on this machine, all of them if unset) and `GLOO_SOCKET_IFNAME`,
    /// which pick the [`Link`].
    /// `None` when no world of more than one rank is given: the process trains alone.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Rank>> {
        let number = |name: &str| -> Result<Option<usize>> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse::<usize>()
                        .map_err(|_| Error::Config(format!("{name}={v:?} is not a whole number")))
                })
                .transpose()
        };
        let world = number("WORLD_SIZE")?.unwrap_or(1);
        if world <= 1 {
            return Ok(None);
        }
        let rank = number("RANK")?
            .ok_or_else(|| Error::Config(format!("WORLD_SIZE={world} is set but RANK is not")))?;
        let meeting = match var("PADDOCK_MEETING_FILE") {
            Some(file) => Meeting::File(file.into()),
            None => Meeting::Tcp {
                host: var("MASTER_ADDR").ok_or_else(|| {
                    Error::Config(
                        "WORLD_SIZE is set but neither MASTER_ADDR nor PADDOCK_MEETING_FILE says where the ranks meet"
                            .into(),
                    )
                })?,
                port: match var("MASTER_PORT") {
                    Some(p) => p.trim().parse().map_err(|_| {
                        Error::Config(format!("MASTER_PORT={p:?} is not a port number"))
                    })?,
                    None => 29500,
                },
            },
        };
        let timeout = match number("PADDOCK_COLLECTIVE_TIMEOUT_SECS")? {
            Some(0) => {
                return Err(Error::Config(
                    "PADDOCK_COLLECTIVE_TIMEOUT_SECS must be at least 1".into(),
                ))
            }
            Some(secs) => Duration::from_secs(secs as u64),
            None => DEFAULT_TIMEOUT,
        };
        let on_this_machine = number("LOCAL_WORLD_SIZE")?.unwrap_or(world);
        let link = match (var("GLOO_SOCKET_IFNAME"), &meeting) {
            (Some(interface), _) => Link::Interface(interface),
            _ if on_this_machine < world => Link::Hostname,
            (None, Meeting::File(_)) => Link::Loopback,
            (None, Meeting::Tcp { host, .. }) => Link::Host(host.clone()),
        };
        let me = Rank {
            rank,
            world,
            meeting,
            link,
            timeout,
        };
        if rank >= world {
            return Err(Error::Config(format!(
                "RANK={rank} is not one of the WORLD_SIZE={world} ranks (0 to {})",
                world - 1
            )));
        }
        Ok(Some(me))
    }
}

/// A joined group of ranks. Collectives are issued in the same order on every rank, from one thread
/// at a time (`&mut self`), as c10d requires.
pub struct Group {
    raw: NonNull<c_void>,
    rank: usize,
    world: usize,
}

// SAFETY: the process group may be used from any thread (c10d's groups run their work on threads of
// their own); `&mut self` on every collective keeps one caller at a time.
unsafe impl Send for Group {}

unsafe extern "C" {
    fn paddock_group_join(
        file: *const c_char,
        host: *const c_char,
        port: u16,
        link: i32,
        link_name: *const c_char,
        rank: i32,
        world: i32,
        timeout_ms: i64,
        out: *mut *mut c_void,
        err: *mut c_char,
        err_len: usize,
    ) -> i32;
    fn paddock_group_free(group: *mut c_void);
    fn paddock_group_all_reduce_sum(
        group: *mut c_void,
        tensor: *mut c_void,
        err: *mut c_char,
        err_len: usize,
    ) -> i32;
    fn paddock_group_broadcast(
        group: *mut c_void,
        tensor: *mut c_void,
        root: i32,
        err: *mut c_char,
        err_len: usize,
    ) -> i32;
    fn paddock_group_barrier(group: *mut c_void, err: *mut c_char, err_len: usize) -> i32;
}

/// Calls into the shim with a message buffer; a failure becomes `Error::Collective` naming what was
/// being done and by which rank.
fn checked(rank: usize, doing: &str, call: impl FnOnce(*mut c_char, usize) -> i32) -> Result<()> {
    let mut err = vec![0 as c_char; 2048];
    if call(err.as_mut_ptr(), err.len()) == 0 {
        return Ok(());
    }
    // SAFETY: the shim writes a NUL-terminated message of at most `err.len()` bytes on failure.
    let why = unsafe { CStr::from_ptr(err.as_ptr()) }.to_string_lossy();
    Err(Error::Collective(format!(
        "rank {rank}: {doing}: {}",
        why.trim()
    )))
}

fn c_string(what: &str, text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::Config(format!("{what} contains a NUL byte")))
}

impl Group {
    /// Meets the other ranks and forms the group; fails when they do not all come within the timeout.
    pub fn join(me: &Rank) -> Result<Group> {
        if me.world == 0 || me.rank >= me.world {
            return Err(Error::Config(format!(
                "rank {} is not one of the {} ranks of the run",
                me.rank, me.world
            )));
        }
        let (file, host, port) = match &me.meeting {
            Meeting::File(path) => (
                Some(c_string(
                    "the meeting file's path",
                    &path.to_string_lossy(),
                )?),
                c_string("the host", "")?,
                0,
            ),
            Meeting::Tcp { host, port } => (None, c_string("the host", host)?, *port),
        };
        // The shim's link kinds: 0 a host name, 1 an interface, 2 the machine's hostname.
        let (link, link_name) = match &me.link {
            Link::Loopback => (0, c_string("the host", "127.0.0.1")?),
            Link::Host(host) => (0, c_string("the host", host)?),
            Link::Interface(name) => (1, c_string("GLOO_SOCKET_IFNAME", name)?),
            Link::Hostname => (2, c_string("the host", "")?),
        };
        let timeout_ms = i64::try_from(me.timeout.as_millis())
            .unwrap_or(i64::MAX)
            .max(1);
        let mut raw = std::ptr::null_mut();
        checked(me.rank, "meeting the other ranks", |err, len| {
            // SAFETY: the strings live for the call; the shim catches every exception and writes the
            // group to `raw` only on success.
            unsafe {
                paddock_group_join(
                    file.as_ref().map_or(std::ptr::null(), |f| f.as_ptr()),
                    host.as_ptr(),
                    port,
                    link,
                    link_name.as_ptr(),
                    me.rank as i32,
                    me.world as i32,
                    timeout_ms,
                    &mut raw,
                    err,
                    len,
                )
            }
        })?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| Error::Collective("the process group was not created".into()))?;
        Ok(Group {
            raw,
            rank: me.rank,
            world: me.world,
        })
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn world(&self) -> usize {
        self.world
    }

    /// Sums a dense, contiguous tensor over the ranks, in place.
    pub fn all_reduce_sum(&mut self, tensor: &mut Tensor) -> Result<()> {
        let raw = self.raw.as_ptr();
        let t = tensor.as_mut_ptr().cast::<c_void>();
        // SAFETY: `t` is a live at::Tensor for the call; the shim catches every exception.
        checked(self.rank, "summing over the ranks", |err, len| unsafe {
            paddock_group_all_reduce_sum(raw, t, err, len)
        })
    }

    /// Gives every rank rank `root`'s values of a dense, contiguous tensor.
    pub fn broadcast(&mut self, tensor: &mut Tensor, root: usize) -> Result<()> {
        let raw = self.raw.as_ptr();
        let t = tensor.as_mut_ptr().cast::<c_void>();
        // SAFETY: as in `all_reduce_sum`.
        checked(self.rank, "receiving rank 0's values", |err, len| unsafe {
            paddock_group_broadcast(raw, t, root as i32, err, len)
        })
    }

    /// Returns once every rank has called it.
    pub fn barrier(&mut self) -> Result<()> {
        let raw = self.raw.as_ptr();
        // SAFETY: as in `all_reduce_sum`.
        checked(
            self.rank,
            "waiting for the other ranks",
            |err, len| unsafe { paddock_group_barrier(raw, err, len) },
        )
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `paddock_group_join` and is freed once.
        unsafe { paddock_group_free(self.raw.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    /// Runs `body` as each of `world` ranks, each on its own thread with its own group.
    fn ranks<T: Send + 'static>(
        world: usize,
        meeting: Meeting,
        link: Link,
        timeout: Duration,
        body: impl Fn(Result<Group>) -> T + Send + Sync + Clone + 'static,
    ) -> Vec<T> {
        let threads: Vec<_> = (0..world)
            .map(|rank| {
                let me = Rank {
                    rank,
                    world,
                    meeting: meeting.clone(),
                    link: link.clone(),
                    timeout,
                };
                let body = body.clone();
                std::thread::spawn(move || body(Group::join(&me)))
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    }

    fn values(t: &Tensor) -> Vec<f32> {
        Vec::<f32>::try_from(t.flatten(0, -1)).unwrap()
    }

    #[test]
    fn ranks_meeting_at_a_file_sum_broadcast_and_wait_for_each_other() {
        // On one machine's loopback, and on the hostname's address as ranks across machines link.
        for link in [Link::Loopback, Link::Hostname] {
            let dir = tempfile::tempdir().unwrap();
            let meeting = Meeting::File(dir.path().join("meeting"));
            let got = ranks(3, meeting, link.clone(), Duration::from_secs(60), |group| {
                let mut group = group.unwrap();
                let r = group.rank() as f32;
                let mut sum = Tensor::from_slice(&[r + 1.0, 10.0 * r]);
                group.all_reduce_sum(&mut sum).unwrap();
                let mut shared = if group.rank() == 0 {
                    Tensor::arange(4, (Kind::Float, tch::Device::Cpu))
                } else {
                    Tensor::zeros([4], (Kind::Float, tch::Device::Cpu))
                };
                group.broadcast(&mut shared, 0).unwrap();
                group.barrier().unwrap();
                (values(&sum), values(&shared))
            });
            for (sum, shared) in got {
                assert_eq!(sum, vec![6.0, 30.0], "{link:?}");
                assert_eq!(shared, vec![0.0, 1.0, 2.0, 3.0], "{link:?}");
            }
        }
    }

    #[test]
    fn ranks_meeting_over_tcp_sum_a_matrix_in_place() {
        // A port nobody holds now; the TCP store binds it again at once.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let meeting = Meeting::Tcp {
            host: "127.0.0.1".into(),
            port,
        };
        let link = Link::Host("127.0.0.1".into());
        let got = ranks(2, meeting, link, Duration::from_secs(60), |group| {
            let mut group = group.unwrap();
            let mut t =
                Tensor::ones([2, 3], (Kind::Float, tch::Device::Cpu)) * (group.rank() + 1) as f64;
            group.all_reduce_sum(&mut t).unwrap();
            values(&t)
        });
        assert_eq!(got, vec![vec![3.0; 6], vec![3.0; 6]]);
    }

    #[test]
    fn a_rank_whose_peers_never_come_fails_within_its_timeout_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let me = Rank {
            rank: 0,
            world: 2,
            meeting: Meeting::File(dir.path().join("meeting")),
            link: Link::Loopback,
            timeout: Duration::from_secs(2),
        };
        let started = std::time::Instant::now();
        let Err(Error::Collective(why)) = Group::join(&me) else {
            panic!("joined a group whose other rank never came");
        };
        assert!(
            why.starts_with("rank 0: meeting the other ranks: "),
            "{why}"
        );
        // Bounded: the timeout, plus the time to say so (no wall-clock figure beyond "it returned").
        assert!(started.elapsed() < Duration::from_secs(120), "{why}");
    }

    fn env(vars: &[(&str, &str)]) -> Result<Option<Rank>> {
        let vars: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Rank::from_env(|k| vars.get(k).cloned())
    }

    #[test]
    fn a_rank_is_read_from_torchruns_variables_and_bad_ones_are_named() {
        assert_eq!(env(&[]).unwrap(), None);
        assert_eq!(env(&[("WORLD_SIZE", "1"), ("RANK", "0")]).unwrap(), None);
        assert_eq!(
            env(&[("WORLD_SIZE", "4"), ("RANK", "3"), ("MASTER_ADDR", "node1")]).unwrap(),
            Some(Rank {
                rank: 3,
                world: 4,
                meeting: Meeting::Tcp {
                    host: "node1".into(),
                    port: 29500
                },
                link: Link::Host("node1".into()),
                timeout: DEFAULT_TIMEOUT,
            })
        );
        let file = env(&[
            ("WORLD_SIZE", "2"),
            ("RANK", "0"),
            ("PADDOCK_MEETING_FILE", "/shared/run/meeting"),
            ("PADDOCK_COLLECTIVE_TIMEOUT_SECS", "30"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(file.meeting, Meeting::File("/shared/run/meeting".into()));
        assert_eq!(file.link, Link::Loopback);
        assert_eq!(file.timeout, Duration::from_secs(30));
        // Ranks on several machines: the hostname's address, or the interface the admin names.
        let spread = [
            ("WORLD_SIZE", "4"),
            ("RANK", "2"),
            ("LOCAL_WORLD_SIZE", "2"),
            ("PADDOCK_MEETING_FILE", "/shared/run/meeting"),
        ];
        assert_eq!(env(&spread).unwrap().unwrap().link, Link::Hostname);
        let named = [spread.as_slice(), &[("GLOO_SOCKET_IFNAME", "ib0")]].concat();
        assert_eq!(
            env(&named).unwrap().unwrap().link,
            Link::Interface("ib0".into())
        );
        for (vars, said) in [
            (vec![("WORLD_SIZE", "two")], "WORLD_SIZE=\"two\" is not a whole number"),
            (vec![("WORLD_SIZE", "2")], "WORLD_SIZE=2 is set but RANK is not"),
            (
                vec![("WORLD_SIZE", "2"), ("RANK", "2"), ("MASTER_ADDR", "a")],
                "RANK=2 is not one of the WORLD_SIZE=2 ranks (0 to 1)",
            ),
            (
                vec![("WORLD_SIZE", "2"), ("RANK", "1")],
                "WORLD_SIZE is set but neither MASTER_ADDR nor PADDOCK_MEETING_FILE says where the ranks meet",
            ),
            (
                vec![("WORLD_SIZE", "2"), ("RANK", "1"), ("MASTER_ADDR", "a"), ("MASTER_PORT", "99999")],
                "MASTER_PORT=\"99999\" is not a port number",
            ),
        ] {
            match env(&vars) {
                Err(Error::Config(why)) => assert_eq!(why, said),
                other => panic!("{vars:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_rank_outside_the_world_is_refused_before_meeting_anyone() {
        let me = Rank {
            rank: 2,
            world: 2,
            meeting: Meeting::File("/nonexistent/meeting".into()),
            link: Link::Loopback,
            timeout: Duration::from_secs(1),
        };
        let Err(Error::Config(why)) = Group::join(&me) else {
            panic!("rank 2 of 2 joined");
        };
        assert_eq!(why, "rank 2 is not one of the 2 ranks of the run");
    }

    #[test]
    fn a_collective_a_peer_left_fails_instead_of_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let meeting = Meeting::File(dir.path().join("meeting"));
        let got = ranks(
            2,
            meeting,
            Link::Loopback,
            Duration::from_secs(60),
            |group| {
                let mut group = group.unwrap();
                group.barrier().unwrap();
                if group.rank() == 1 {
                    // Gone: its group closes its connections.
                    drop(group);
                    return None;
                }
                let mut t = Tensor::ones([1], (Kind::Float, tch::Device::Cpu));
                Some(group.all_reduce_sum(&mut t))
            },
        );
        match &got[0] {
            Some(Err(Error::Collective(why))) => {
                assert!(why.starts_with("rank 0: summing over the ranks: "), "{why}")
            }
            other => panic!("rank 0's sum with no peer: {other:?}"),
        }
    }
}
