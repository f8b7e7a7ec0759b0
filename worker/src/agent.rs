//! One agent process: `sh -c CMD` in the project directory, in its own process group, the task
//! JSON on stdin, its stdout and stderr read line by line on two threads into one channel.
//!
//! Stopping is always by process group (SIGTERM, then SIGKILL after a pause), so an agent's
//! own children go with it. This module never talks to the server; the task runner does.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Longest line kept (longer ones are cut, marked with `…`).
pub const MAX_LINE_BYTES: usize = 8192;

/// Which pipe a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipe {
    Stdout,
    Stderr,
}

/// One line of agent output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub pipe: Pipe,
    pub text: String,
}

/// A running agent.
#[derive(Debug)]
pub struct Agent {
    child: Child,
    pgid: Pid,
    /// Output lines; disconnected once both pipes closed.
    pub lines: Receiver<Line>,
}

/// What to run and with what.
#[derive(Clone, Debug)]
pub struct AgentSpec<'a> {
    pub command: &'a str,
    pub dir: &'a Path,
    pub env: BTreeMap<String, String>,
    pub stdin: Vec<u8>,
}

impl Agent {
    /// Spawns `sh -c command` in its own process group.
    pub fn spawn(spec: &AgentSpec<'_>) -> std::io::Result<Agent> {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(spec.command)
            .current_dir(spec.dir)
            .envs(&spec.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        let (tx, rx) = channel();
        if let Some(out) = child.stdout.take() {
            read_lines(out, Pipe::Stdout, tx.clone());
        }
        if let Some(err) = child.stderr.take() {
            read_lines(err, Pipe::Stderr, tx);
        }
        if let Some(mut stdin) = child.stdin.take() {
            let bytes = spec.stdin.clone();
            // A separate thread: an agent that never reads stdin must not block the worker.
            thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            });
        }
        Ok(Agent {
            child,
            pgid: Pid::from_raw(pid),
            lines: rx,
        })
    }

    /// The exit status, if the process ended.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Sends `signal` to the agent's whole process group (errors mean it is already gone).
    pub fn signal_group(&self, signal: Signal) {
        let _ = killpg(self.pgid, signal);
    }

    /// Stops the group: SIGTERM, then SIGKILL if the leader has not exited within `patience`.
    /// Returns the leader's exit status.
    pub fn stop(&mut self, patience: Duration) -> Option<ExitStatus> {
        self.signal_group(Signal::SIGTERM);
        let until = Instant::now() + patience;
        while Instant::now() < until {
            if let Ok(Some(st)) = self.child.try_wait() {
                // Stragglers in the group that ignored SIGTERM go too.
                self.signal_group(Signal::SIGKILL);
                return Some(st);
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.signal_group(Signal::SIGKILL);
        self.child.wait().ok()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.signal_group(Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

fn read_lines(pipe: impl Read + Send + 'static, which: Pipe, tx: Sender<Line>) {
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader
                .by_ref()
                .take(MAX_LINE_BYTES as u64)
                .read_until(b'\n', &mut buf)
            {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    let cut = buf.last() != Some(&b'\n') && buf.len() >= MAX_LINE_BYTES;
                    let mut text = String::from_utf8_lossy(&buf)
                        .trim_end_matches(['\n', '\r'])
                        .to_string();
                    if cut {
                        text.push('…');
                    }
                    if tx.send(Line { pipe: which, text }).is_err() {
                        return;
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(cmd: &'a str, dir: &'a Path) -> AgentSpec<'a> {
        AgentSpec {
            command: cmd,
            dir,
            env: BTreeMap::from([("GREETING".to_string(), "hi".to_string())]),
            stdin: b"{\"task\":1}".to_vec(),
        }
    }

    #[test]
    fn lines_env_and_stdin_reach_the_worker() {
        let dir = std::env::temp_dir();
        let mut a = Agent::spawn(&spec(
            "echo $GREETING; cat; echo; echo oops >&2; exit 3",
            &dir,
        ))
        .unwrap();
        let lines: Vec<Line> = a.lines.iter().collect();
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert!(texts.contains(&"hi"), "{texts:?}");
        assert!(texts.contains(&"{\"task\":1}"), "{texts:?}");
        assert!(lines.contains(&Line {
            pipe: Pipe::Stderr,
            text: "oops".into()
        }));
        let st = loop {
            if let Some(st) = a.try_wait().unwrap() {
                break st;
            }
            thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(st.code(), Some(3));
    }

    #[test]
    fn stop_kills_the_whole_group() {
        let dir = std::env::temp_dir();
        // The shell ignores TERM and its child sleeps: only the group kill ends both.
        let mut a = Agent::spawn(&spec("trap '' TERM; sleep 30 & wait", &dir)).unwrap();
        thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        let st = a.stop(Duration::from_millis(200));
        assert!(st.is_some());
        assert!(started.elapsed() < Duration::from_secs(5));
        // Both pipes closed: the sleeping grandchild is gone too.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(
                a.lines.recv_timeout(Duration::from_millis(50)),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
            ) {
                return;
            }
        }
        panic!("the agent's pipes stayed open: a group member survived");
    }
}
