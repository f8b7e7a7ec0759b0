//! What the worker shows: on a TTY, a live block with one line per running task (task, elapsed,
//! last message) redrawn in place under the scrolling event log; otherwise plain log lines, one
//! per event, fit for files and CI logs.
//!
//! This module only formats and writes to stdout; it never decides anything about a task.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

use crate::duration::format_duration;

/// Widest last-message column on a TTY.
const MESSAGE_COLUMNS: usize = 72;

#[derive(Debug)]
struct Row {
    started: Instant,
    last: String,
}

#[derive(Debug, Default)]
struct State {
    rows: BTreeMap<String, Row>,
    /// Lines of the live block currently on screen.
    drawn: usize,
}

/// The worker's output.
#[derive(Debug)]
pub struct Display {
    tty: bool,
    state: Mutex<State>,
}

impl Display {
    /// `tty`: whether stdout is a terminal (live block) or not (plain lines).
    pub fn new(tty: bool) -> Display {
        Display {
            tty,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An event line (`task` prefixes it when given).
    pub fn event(&self, task: Option<&str>, text: &str) {
        let line = match task {
            Some(t) => format!("[worker] {t}: {text}"),
            None => format!("[worker] {text}"),
        };
        bernstein_os::log::mirror(format_args!("{line}"));
        let mut st = self.state();
        let mut out = std::io::stdout().lock();
        if self.tty {
            clear_block(&mut out, st.drawn);
            let _ = writeln!(out, "{line}");
            st.drawn = draw_block(&mut out, &st.rows);
        } else {
            let _ = writeln!(out, "{line}");
        }
        let _ = out.flush();
    }

    /// A task began running.
    pub fn task_started(&self, task: &str) {
        self.state().rows.insert(
            task.to_string(),
            Row {
                started: Instant::now(),
                last: String::new(),
            },
        );
    }

    /// A line of agent output: the row's last message on a TTY, a log line otherwise (secrets
    /// redacted either way, by the same DLP as the server's).
    pub fn task_output(&self, task: &str, text: &str) {
        let text = &bernstein_domain::dlp::redact(text).text;
        if self.tty {
            if let Some(row) = self.state().rows.get_mut(task) {
                row.last = text.to_string();
            }
        } else {
            self.event(Some(task), &format!("| {text}"));
        }
    }

    /// A task stopped running.
    pub fn task_ended(&self, task: &str) {
        self.state().rows.remove(task);
        self.redraw();
    }

    /// Redraws the live block (TTY only; a no-op otherwise).
    pub fn redraw(&self) {
        if !self.tty {
            return;
        }
        let mut st = self.state();
        let mut out = std::io::stdout().lock();
        clear_block(&mut out, st.drawn);
        st.drawn = draw_block(&mut out, &st.rows);
        let _ = out.flush();
    }
}

fn clear_block(out: &mut impl Write, drawn: usize) {
    if drawn > 0 {
        // Up to the block's first line, then clear to the end of the screen.
        let _ = write!(out, "\x1b[{drawn}A\r\x1b[J");
    }
}

fn draw_block(out: &mut impl Write, rows: &BTreeMap<String, Row>) -> usize {
    for (task, row) in rows {
        let _ = writeln!(out, "{}", live_line(task, row.started.elapsed(), &row.last));
    }
    rows.len()
}

/// One live line: `▶ T-… 1m05s  last message`, the message cut to fit.
pub fn live_line(task: &str, elapsed: std::time::Duration, last: &str) -> String {
    let mut msg: String = last
        .chars()
        .filter(|c| !c.is_control())
        .take(MESSAGE_COLUMNS)
        .collect();
    if last.chars().count() > MESSAGE_COLUMNS {
        msg.push('…');
    }
    format!("▶ {task} {:>8}  {msg}", format_duration(elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn live_lines_are_cut_and_free_of_control_characters() {
        let long = "x".repeat(200);
        let line = live_line("T-1", Duration::from_secs(65), &long);
        assert!(line.starts_with("▶ T-1    1m05s  xxx"), "{line}");
        assert!(line.ends_with('…'));
        assert_eq!(line.chars().filter(|c| *c == 'x').count(), MESSAGE_COLUMNS);
        let line = live_line("T-1", Duration::from_secs(1), "a\x1b[2Jb");
        assert!(!line.contains('\x1b'));
    }

    #[test]
    fn the_block_redraw_moves_up_over_what_was_drawn() {
        let mut buf = Vec::new();
        clear_block(&mut buf, 3);
        assert_eq!(buf, b"\x1b[3A\r\x1b[J");
        let mut buf = Vec::new();
        clear_block(&mut buf, 0);
        assert!(buf.is_empty());
    }
}
