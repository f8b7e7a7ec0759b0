//! Standard output for the commands. `println!` panics when stdout is closed
//! (`bernstein status | head` on a long table); `say!` ends the process quietly
//! instead, as command-line tools do when their reader has gone, and reports any other write
//! error on stderr.

use std::io;

/// Writes one line to stdout, or ends the process if stdout is gone.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            crate::output::closed(e)
        }
    }};
}

/// What a failed write to stdout does: a closed pipe ends the process with status 0 (the
/// reader asked for no more), anything else with status 1 and a line on stderr.
pub fn closed(e: io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    bernstein_os::log_line!("bernstein: cannot write to stdout: {e}");
    std::process::exit(1)
}
