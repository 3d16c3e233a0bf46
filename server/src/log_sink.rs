//! `paddock log-sink`: the end of the pipe a job's wrapper sends the trainer's stderr into. It copies the
//! stream to `train.log` up to a byte limit, then writes one line saying so and keeps reading — and
//! dropping — the rest until the trainer closes the pipe, so the raw log of a job that prints without
//! end cannot fill the disk, and the trainer never blocks on a full pipe or dies of a closed one. The
//! supervisor reads `train.log` by byte offset, which only works on a file that is never rotated or
//! truncated under it; the job's complete, rotated log is the server's (`logs/jobs/<id>/job.log`).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct LogSinkArgs {
    /// Bytes written at most (the note about the cut comes on top).
    #[arg(long)]
    pub max_bytes: u64,
    /// The file to append to.
    pub file: PathBuf,
}

/// Copies stdin to the file; always exit code 0 once stdin ends (a failing disk is no reason to stop
/// draining the trainer's stderr).
pub fn run(args: &LogSinkArgs) -> anyhow::Result<i32> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.file);
    let mut out: Box<dyn Write> = match file {
        Ok(f) => Box::new(f),
        Err(e) => {
            eprintln!("log-sink: cannot open {}: {e}", args.file.display());
            Box::new(std::io::sink())
        }
    };
    copy_capped(std::io::stdin().lock(), &mut out, args.max_bytes);
    Ok(0)
}

/// Copies whole lines from `input` to `out` while they fit in `max_bytes`; then a note, then nothing.
/// Returns the bytes written (the note excluded).
pub fn copy_capped(input: impl Read, out: &mut dyn Write, max_bytes: u64) -> u64 {
    let mut reader = BufReader::new(input);
    let mut line = Vec::new();
    let mut written = 0u64;
    let mut full = false;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            // Interrupted reads are retried by read_until; anything else ends the copy.
            Err(_) => break,
        }
        if full {
            continue;
        }
        if written + line.len() as u64 > max_bytes {
            full = true;
            let note = format!(
                "{}\n",
                contracts::types::LogNote::TrainLogFull { max_bytes }.english()
            );
            let _ = out.write_all(note.as_bytes()).and_then(|_| out.flush());
            continue;
        }
        // A failed write (disk full) drops the line; the copy goes on, so the trainer is never stuck.
        if out.write_all(&line).and_then(|_| out.flush()).is_ok() {
            written += line.len() as u64;
        }
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_lines_are_copied_up_to_the_limit_then_one_note_and_the_rest_is_drained() {
        let input = "one\ntwo\nthree\nfour\n".repeat(3);
        let mut out = Vec::new();
        let written = copy_capped(input.as_bytes(), &mut out, 16);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            written, 14,
            "one, two, three: 4 + 4 + 6 bytes; four would pass 16"
        );
        assert!(
            text.starts_with("one\ntwo\nthree\n[paddock] train.log reached its limit of 16 bytes"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 4, "nothing after the note: {text}");

        let mut out = Vec::new();
        assert_eq!(copy_capped("a\nb".as_bytes(), &mut out, 100), 3);
        assert_eq!(out, b"a\nb", "a last line without a newline is kept");
    }
}
