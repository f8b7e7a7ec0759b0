//! CPU time and threads of processes, read from `/proc` (Linux).

/// `sysconf(_SC_CLK_TCK)` is 100 on every Linux this runs on.
pub const TICKS_PER_SECOND: f64 = 100.0;

/// The fields of `/proc/PID/stat` after the command name (which may hold spaces).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

fn field(fields: &[String], i: usize) -> Option<u64> {
    fields.get(i)?.parse().ok()
}

/// User plus system CPU time of `pid`, in clock ticks.
pub fn ticks(pid: u32) -> Option<u64> {
    let f = stat_fields(pid)?;
    Some(field(&f, 11)? + field(&f, 12)?)
}

/// User plus system CPU time of every process named `name` (`comm`), and of the children
/// they waited for (so a process tree's exited workers count too), in clock ticks.
pub fn ticks_of_named(name: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut total = 0;
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        if let Some(f) = stat_fields(pid) {
            total += (11..=14).filter_map(|i| field(&f, i)).sum::<u64>();
        }
    }
    total
}

/// The threads of `pid` now.
pub fn threads(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
}
