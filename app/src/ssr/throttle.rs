//! Throttling of failed sign-ins, per username and per client address. Only failures count, and the
//! check happens *before* the password is verified, so while a key is locked even the right password
//! is refused (otherwise guessing could simply continue). Hand-written rather than a rate-limiting
//! crate because those limit every request, not failures, and offer no "peek before spending".
//! In memory: the counters only matter for a window of minutes, and a restart forgetting them is fine.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures within [`WINDOW`] after which one username is locked: enough for typos, too few to guess.
pub const MAX_FAILURES_PER_USERNAME: usize = 5;
/// Failures within [`WINDOW`] after which one address is locked; higher, because an office may share
/// one address.
pub const MAX_FAILURES_PER_IP: usize = 30;
/// How long a failure is remembered.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// Above this many keys, expired ones are swept so a flood of random usernames cannot grow memory.
const SWEEP_ABOVE: usize = 10_000;

#[derive(Default)]
pub struct SignInThrottle {
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

fn user_key(username: &str) -> String {
    format!("u:{}", username.trim().to_lowercase())
}

fn ip_key(ip: &str) -> String {
    format!("ip:{ip}")
}

impl SignInThrottle {
    /// `Err(seconds)` when the username or the address is locked: how long until an attempt is allowed.
    pub fn check(&self, username: &str, ip: Option<&str>) -> Result<(), u64> {
        let now = Instant::now();
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let mut wait = None::<Duration>;
        let mut keys = vec![(user_key(username), MAX_FAILURES_PER_USERNAME)];
        if let Some(ip) = ip {
            keys.push((ip_key(ip), MAX_FAILURES_PER_IP));
        }
        for (key, max) in keys {
            if let Some(times) = map.get_mut(&key) {
                prune(times, now);
                if times.len() >= max {
                    // Allowed again when enough of the oldest failures have aged out.
                    let oldest_relevant = times[times.len() - max];
                    let w = (oldest_relevant + WINDOW).saturating_duration_since(now);
                    wait = Some(wait.map_or(w, |x| x.max(w)));
                }
            }
        }
        match wait {
            // Round up: "retry after 0 s" would invite an immediate, refused retry.
            Some(w) => Err(w.as_secs() + 1),
            None => Ok(()),
        }
    }

    pub fn record_failure(&self, username: &str, ip: Option<&str>) {
        let now = Instant::now();
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() > SWEEP_ABOVE {
            map.retain(|_, times| {
                prune(times, now);
                !times.is_empty()
            });
        }
        map.entry(user_key(username)).or_default().push_back(now);
        if let Some(ip) = ip {
            map.entry(ip_key(ip)).or_default().push_back(now);
        }
    }

    /// A successful sign-in forgets the username's failures (not the address's: one account's
    /// success says nothing about guesses at others).
    pub fn record_success(&self, username: &str) {
        let mut map = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(&user_key(username));
    }
}

fn prune(times: &mut VecDeque<Instant>, now: Instant) {
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= WINDOW)
    {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_a_username_after_max_failures_and_not_others() {
        let t = SignInThrottle::default();
        for _ in 0..MAX_FAILURES_PER_USERNAME {
            assert!(t.check("Alice", Some("10.0.0.1")).is_ok());
            t.record_failure("Alice", Some("10.0.0.1"));
        }
        let wait = t.check("alice", Some("10.0.0.2")).unwrap_err();
        assert!(wait > 0 && wait <= WINDOW.as_secs() + 1);
        assert!(t.check("bob", Some("10.0.0.1")).is_ok());
    }

    #[test]
    fn locks_an_address_after_max_failures_across_usernames() {
        let t = SignInThrottle::default();
        for i in 0..MAX_FAILURES_PER_IP {
            t.record_failure(&format!("user{i}"), Some("10.0.0.9"));
        }
        assert!(t.check("someone-new", Some("10.0.0.9")).is_err());
        assert!(t.check("someone-new", Some("10.0.0.8")).is_ok());
    }

    #[test]
    fn success_forgets_the_username() {
        let t = SignInThrottle::default();
        for _ in 0..MAX_FAILURES_PER_USERNAME - 1 {
            t.record_failure("carol", None);
        }
        t.record_success("carol");
        t.record_failure("carol", None);
        assert!(t.check("carol", None).is_ok());
    }
}
