//! Budgets for the attempts that cost a password hash: sign-in failures and sign-ups.
//!
//! An attempt *takes* a unit from every budget it is counted against before the password is
//! hashed, under one lock, and only then runs; a sign-in that turns out right gives its unit back.
//! Checking first and recording after the slow hash (what this replaced) let 60 parallel guesses
//! all pass the check before the first failure was written.
//!
//! Sign-in failures are counted per (account, address) and per address, never per account alone:
//! a per-account lock lets anyone lock the admin out by typing five wrong passwords from anywhere.
//! The per-address budget bounds guessing across accounts; the per-pair budget bounds guessing at
//! one account from one place while its owner, elsewhere, is unaffected.
//!
//! Hand-written rather than a rate-limiting crate because those limit every request, not
//! failures, and cannot give a unit back. In memory: the budgets matter for minutes, and a restart
//! forgetting them is fine.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many units a key has per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub max: usize,
    pub window: Duration,
}

/// Failed sign-ins for one account from one address: enough for typos, too few to guess.
pub const SIGN_IN_PER_ACCOUNT_AND_ADDRESS: Rule = Rule {
    max: 5,
    window: Duration::from_secs(15 * 60),
};
/// Failed sign-ins from one address across accounts; higher, because an office may share one address.
pub const SIGN_IN_PER_ADDRESS: Rule = Rule {
    max: 30,
    window: Duration::from_secs(15 * 60),
};
/// Sign-up attempts per address per hour unless configured (`--signups-per-hour`): a team signing
/// up together fits, a script creating accounts (each costs a hash and ~19 MiB) does not.
pub const DEFAULT_SIGN_UPS_PER_HOUR: usize = 20;

/// Above this many keys, expired ones are swept so a flood of random usernames cannot grow memory.
const SWEEP_ABOVE: usize = 10_000;

/// The units taken by one attempt: kept (a failure) unless given back.
#[must_use = "a ticket not given back counts as a failure"]
pub struct Ticket {
    keys: Vec<String>,
    at: Instant,
}

pub struct Throttle {
    taken: Mutex<HashMap<String, (Duration, VecDeque<Instant>)>>,
    /// Sign-up attempts allowed per address per hour; 0: no limit.
    sign_ups_per_hour: usize,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new(DEFAULT_SIGN_UPS_PER_HOUR)
    }
}

/// The key of a sign-in at `username` from `ip`.
pub fn sign_in_keys(username: &str, ip: Option<&str>) -> [(String, Rule); 2] {
    let ip = ip.unwrap_or("-");
    [
        (
            format!("in:{}@{ip}", username.trim().to_lowercase()),
            SIGN_IN_PER_ACCOUNT_AND_ADDRESS,
        ),
        (format!("in@{ip}"), SIGN_IN_PER_ADDRESS),
    ]
}

impl Throttle {
    pub fn new(sign_ups_per_hour: usize) -> Self {
        Throttle {
            taken: Mutex::default(),
            sign_ups_per_hour,
        }
    }

    /// The key of a sign-up from `ip`.
    pub fn sign_up_key(&self, ip: Option<&str>) -> (String, Rule) {
        (
            format!("up@{}", ip.unwrap_or("-")),
            Rule {
                max: self.sign_ups_per_hour,
                window: Duration::from_secs(3600),
            },
        )
    }

    /// Takes one unit from every key, or from none: `Err(seconds)` until all of them have one again.
    /// A rule with `max == 0` never refuses.
    pub fn take(&self, keys: &[(String, Rule)]) -> Result<Ticket, u64> {
        let now = Instant::now();
        let mut map = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() > SWEEP_ABOVE {
            map.retain(|_, (window, times)| {
                prune(times, *window, now);
                !times.is_empty()
            });
        }
        let mut wait = None::<Duration>;
        for (key, rule) in keys.iter().filter(|(_, r)| r.max > 0) {
            if let Some((_, times)) = map.get_mut(key) {
                prune(times, rule.window, now);
                if times.len() >= rule.max {
                    // Free again when enough of the oldest units have aged out.
                    let w = (times[times.len() - rule.max] + rule.window)
                        .saturating_duration_since(now);
                    wait = Some(wait.map_or(w, |x| x.max(w)));
                }
            }
        }
        if let Some(w) = wait {
            // Round up: "retry after 0 s" would invite an immediate, refused retry.
            return Err(w.as_secs() + 1);
        }
        let mut taken = Vec::with_capacity(keys.len());
        for (key, rule) in keys.iter().filter(|(_, r)| r.max > 0) {
            let entry = map
                .entry(key.clone())
                .or_insert_with(|| (rule.window, VecDeque::new()));
            entry.1.push_back(now);
            taken.push(key.clone());
        }
        Ok(Ticket {
            keys: taken,
            at: now,
        })
    }

    /// Gives back the ticket's unit on the keys `release` selects (the attempt did not count
    /// against them); the others stay taken.
    pub fn give_back(&self, ticket: Ticket, release: impl Fn(&str) -> bool) {
        let mut map = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        for key in ticket.keys.iter().filter(|k| release(k)) {
            if let Some((_, times)) = map.get_mut(key) {
                if let Some(i) = times.iter().position(|t| *t == ticket.at) {
                    times.remove(i);
                }
            }
        }
    }

    /// Forgets every unit taken on `key` (a right password ends the pair's back-off).
    pub fn forget(&self, key: &str) {
        let mut map = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(key);
    }
}

fn prune(times: &mut VecDeque<Instant>, window: Duration, now: Instant) {
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= window)
    {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_runs_out_and_other_pairs_do_not() {
        let t = Throttle::default();
        for _ in 0..SIGN_IN_PER_ACCOUNT_AND_ADDRESS.max {
            let _failed = t.take(&sign_in_keys("Alice", Some("10.0.0.1"))).unwrap();
        }
        let wait = t
            .take(&sign_in_keys("alice", Some("10.0.0.1")))
            .err()
            .unwrap();
        assert!(wait > 0 && wait <= SIGN_IN_PER_ACCOUNT_AND_ADDRESS.window.as_secs() + 1);
        // The owner, from their own address, and other accounts from the same one, still get in.
        assert!(t.take(&sign_in_keys("alice", Some("10.0.0.2"))).is_ok());
        assert!(t.take(&sign_in_keys("bob", Some("10.0.0.1"))).is_ok());
    }

    #[test]
    fn an_address_runs_out_across_accounts() {
        let t = Throttle::default();
        for i in 0..SIGN_IN_PER_ADDRESS.max {
            let _failed = t
                .take(&sign_in_keys(&format!("user{i}"), Some("10.0.0.9")))
                .unwrap();
        }
        assert!(t
            .take(&sign_in_keys("someone-new", Some("10.0.0.9")))
            .is_err());
        assert!(t
            .take(&sign_in_keys("someone-new", Some("10.0.0.8")))
            .is_ok());
    }

    #[test]
    fn a_refused_take_takes_nothing_and_a_given_back_unit_is_free_again() {
        let t = Throttle::default();
        let rule = Rule {
            max: 1,
            window: Duration::from_secs(60),
        };
        let small = [("a".to_string(), rule), ("b".to_string(), rule)];
        let ticket = t.take(&small).unwrap();
        assert!(t.take(&small[1..]).is_err());
        t.give_back(ticket, |k| k == "b");
        assert!(t.take(&small[1..]).is_ok(), "b was given back");
        assert!(t.take(&small[..1]).is_err(), "a stayed taken");
        t.forget("a");
        assert!(t.take(&small[..1]).is_ok());
    }

    #[test]
    fn parallel_takers_never_exceed_the_budget() {
        let t = std::sync::Arc::new(Throttle::default());
        let granted = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..60 {
                s.spawn(|| {
                    if let Ok(_failed) = t.take(&sign_in_keys("admin", Some("10.1.1.1"))) {
                        granted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(granted.into_inner(), SIGN_IN_PER_ACCOUNT_AND_ADDRESS.max);
    }

    #[test]
    fn a_rule_of_zero_never_refuses() {
        let t = Throttle::new(0);
        for _ in 0..100 {
            let _ = t.take(&[t.sign_up_key(Some("10.0.0.1"))]).unwrap();
        }
    }
}
