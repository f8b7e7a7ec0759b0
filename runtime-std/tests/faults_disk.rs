//! Disk trouble, where this machine can simulate it (mounting needs root with CAP_SYS_ADMIN;
//! without it each test prints why it is skipped and passes):
//! - **No space.** The project lives on a small tmpfs; once a filler file takes the rest of
//!   it, writes get a clear JSON-RPC error naming the cause, the ledger keeps exactly the
//!   acknowledged records (nothing half-written) and verifies, reads still work, and as soon
//!   as space is freed the same server process accepts writes again. Both runtimes.
//! - **Read-only `.sdd/`.** With the project's file system remounted read-only, `audit verify`
//!   still works, a server refuses clearly (at start, or per write) and changes nothing; once
//!   writable again, service resumes on the same ledger. Remounting read-only under a running
//!   server is attempted too; Linux refuses it while the ledger is open for writing (EBUSY), in
//!   which case that part is skipped with the reason printed. (A read-only bind mount would
//!   not do: the server's open descriptor keeps writing through the original mount.)

mod replay_support;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;

use bernstein_store_file::verify_cmd::audit_verify;
use replay_support::{McpProcess, Mount, Scratch, can_mount, cli, tool_payload};
use serde_json::{Value, json};

fn run_call(p: &mut McpProcess, id: u64, goal: &str) -> Value {
    p.request(
        id,
        "tools/call",
        json!({"name": "bernstein_run", "arguments": {"goal": goal}}),
    )
}

fn ledger_len(project: &Path) -> u64 {
    fs::metadata(project.join(".sdd/ledger/ledger.jsonl")).map_or(0, |m| m.len())
}

/// Writes to `path` until the file system is full.
fn fill(path: &Path) {
    let mut f = fs::File::create(path).unwrap();
    let chunk = vec![0x5a; 4096];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
}

fn skip(test: &str, why: &str) {
    eprintln!("{test}: SKIPPED: {why}");
}

#[test]
fn no_space_gives_clear_errors_and_service_resumes_when_space_returns() {
    let scratch = Scratch::new("disk");
    if let Err(why) = can_mount(scratch.path()) {
        return skip(
            "no_space",
            &format!("cannot mount a small tmpfs here ({why})"),
        );
    }
    for runtime in ["std", "smol"] {
        let project = scratch.path().join(runtime);
        fs::create_dir_all(&project).unwrap();
        let _mount = Mount::new(&["-t", "tmpfs", "-o", "size=512k", "tmpfs"], &project);
        let mut p = McpProcess::start(
            &project,
            &["--runtime", runtime],
            &[("BERNSTEIN_MCP_COST_METER", "0")],
        );
        p.initialize("2025-11-25");
        let mut acked = Vec::new();
        for i in 0..3 {
            let reply = run_call(&mut p, i + 1, &format!("before {i}"));
            acked.push(tool_payload(&reply).expect("a run with space")["task_id"].clone());
        }
        let filler = project.join("filler");
        fill(&filler);

        // Writes fail (a few may still fit in the ledger's last page), clearly and cleanly.
        let mut failure = None;
        for i in 0..40 {
            let before = ledger_len(&project);
            let reply = run_call(&mut p, 100 + i, &format!("while full {i}"));
            match reply.get("error") {
                None => acked.push(tool_payload(&reply).expect("a run")["task_id"].clone()),
                Some(e) => {
                    assert_eq!(
                        ledger_len(&project),
                        before,
                        "{runtime}: a failed write left bytes behind"
                    );
                    failure = Some(e.clone());
                    break;
                }
            }
        }
        let e = failure.unwrap_or_else(|| panic!("{runtime}: a full disk never refused a write"));
        assert_eq!(e["code"], json!(-32603), "{runtime}: {e}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("No space left on device") && message.contains("nothing was changed"),
            "{runtime}: {message}"
        );
        let report =
            audit_verify(&project.join(".sdd")).unwrap_or_else(|e| panic!("{runtime}: {e}"));
        // Reads that write nothing keep working.
        assert!(p.request(500, "ping", json!({})).get("result").is_some());
        assert!(
            p.request(501, "tools/list", json!({}))
                .get("result")
                .is_some()
        );

        // Space returns: the same process accepts writes again.
        fs::remove_file(&filler).unwrap();
        let reply = run_call(&mut p, 600, "after space returned");
        acked.push(tool_payload(&reply).unwrap_or_else(|e| panic!("{runtime}: still refused: {e}"))["task_id"].clone());
        let status = tool_payload(&p.request(
            601,
            "tools/call",
            json!({"name": "bernstein_status", "arguments": {"detail": true}}),
        ))
        .expect("status");
        let listed: Vec<&Value> = status["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["id"])
            .collect();
        for id in &acked {
            assert!(
                listed.contains(&id),
                "{runtime}: acknowledged {id} missing from {status}"
            );
        }
        assert_eq!(
            status["counts"]["total"],
            json!(acked.len()),
            "{runtime}: a refused write was recorded"
        );
        assert!(
            p.finish().success(),
            "{runtime}: the server did not exit cleanly"
        );
        let after =
            audit_verify(&project.join(".sdd")).unwrap_or_else(|e| panic!("{runtime}: {e}"));
        assert!(after.records > report.records);
    }
}

/// `mount -o remount,<mode> <dir>` (dir is a mount point).
fn remount(dir: &Path, mode: &str) -> Result<(), String> {
    let out = Command::new("mount")
        .args(["-o", &format!("remount,{mode}")])
        .arg(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

#[test]
fn a_read_only_store_is_refused_clearly_and_service_resumes() {
    let scratch = Scratch::new("rodisk");
    if let Err(why) = can_mount(scratch.path()) {
        return skip("read_only", &format!("cannot mount here ({why})"));
    }
    let project = scratch.path().join("project");
    fs::create_dir_all(&project).unwrap();
    let _mount = Mount::new(&["-t", "tmpfs", "-o", "size=4m", "tmpfs"], &project);
    let mut p = McpProcess::start(&project, &[], &[("BERNSTEIN_MCP_COST_METER", "0")]);
    p.initialize("2025-11-25");
    for i in 0..3 {
        tool_payload(&run_call(&mut p, i + 1, &format!("before {i}"))).expect("a run");
    }
    // Mid-service: Linux refuses to make a file system read-only while a file on it is open
    // for writing, which the running server's ledger is.
    match remount(&project, "ro") {
        Ok(()) => {
            let reply = run_call(&mut p, 10, "while read-only");
            let e = reply
                .get("error")
                .unwrap_or_else(|| panic!("a write on a read-only store succeeded: {reply}"));
            assert!(e["message"].as_str().unwrap().contains("Read-only"), "{e}");
            remount(&project, "rw").unwrap();
        }
        Err(why) => skip(
            "read_only (mid-service)",
            &format!("cannot remount read-only under a running server: {why}"),
        ),
    }
    assert!(p.finish().success());
    let sdd = project.join(".sdd");
    let ledger_before = fs::read(sdd.join("ledger/ledger.jsonl")).unwrap();

    remount(&project, "ro")
        .unwrap_or_else(|why| panic!("remount read-only with no server running: {why}"));
    // Verification only reads.
    let (code, out, err) = cli(&["audit", "verify", "--dir", sdd.to_str().unwrap()]);
    assert_eq!(code, 0, "audit verify on a read-only store: {out}{err}");
    // A server refuses clearly, at start or on its first write, and never panics.
    let mut p = McpProcess::start(&project, &[], &[("BERNSTEIN_MCP_COST_METER", "0")]);
    p.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "bernstein_run", "arguments": {"goal": "while read-only"}}}));
    match p.recv(replay_support::SAFETY_TIMEOUT) {
        Some(line) => {
            let reply: Value = serde_json::from_slice(&line).unwrap();
            let e = reply
                .get("error")
                .unwrap_or_else(|| panic!("a write on a read-only store succeeded: {reply}"));
            assert!(
                e["message"]
                    .as_str()
                    .unwrap()
                    .contains("Read-only file system"),
                "{e}"
            );
            p.kill();
        }
        None => {
            let status = p.child.wait().unwrap();
            assert_eq!(
                status.code(),
                Some(2),
                "a clear refusal exits 2, got {status}"
            );
            let stderr = p.stderr();
            assert!(
                stderr.contains("Read-only file system"),
                "unclear refusal: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
    assert_eq!(
        fs::read(sdd.join("ledger/ledger.jsonl")).unwrap(),
        ledger_before,
        "the read-only store changed"
    );

    // Writable again: service resumes on the same ledger.
    remount(&project, "rw").unwrap();
    let mut p = McpProcess::start(&project, &[], &[("BERNSTEIN_MCP_COST_METER", "0")]);
    tool_payload(&run_call(&mut p, 1, "after")).expect("a run once writable");
    assert!(p.finish().success());
    let after = fs::read(sdd.join("ledger/ledger.jsonl")).unwrap();
    assert!(after.starts_with(&ledger_before) && after.len() > ledger_before.len());
    audit_verify(&sdd).unwrap_or_else(|e| panic!("{e}"));
}

/// Regression test for a crash this suite found: with stderr on the full disk too (a log file
/// next to the project, as a service manager might set up), the server's log line about the
/// failed append panics in `eprintln!` and the process aborts (exit 134) instead of answering.
#[test]
fn a_full_disk_under_the_log_does_not_kill_the_server() {
    let scratch = Scratch::new("disklog");
    if let Err(why) = can_mount(scratch.path()) {
        return skip(
            "full_log",
            &format!("cannot mount a small tmpfs here ({why})"),
        );
    }
    let mnt = scratch.path().join("fs");
    fs::create_dir_all(&mnt).unwrap();
    let _mount = Mount::new(&["-t", "tmpfs", "-o", "size=256k", "tmpfs"], &mnt);
    let project = mnt.join("project");
    fs::create_dir_all(&project).unwrap();
    let mut p = McpProcess::start_logging_to(
        &project,
        &[],
        &[("BERNSTEIN_MCP_COST_METER", "0")],
        mnt.join("stderr.log"),
    );
    tool_payload(&run_call(&mut p, 1, "before")).expect("a run with space");
    fill(&mnt.join("filler"));
    let mut refused = false;
    for i in 0..40 {
        let reply = run_call(&mut p, 10 + i, "while full");
        if reply.get("error").is_some() {
            refused = true;
            break;
        }
    }
    assert!(refused, "a full disk never refused a write");
    assert!(
        p.request(99, "ping", json!({})).get("result").is_some(),
        "the server died after the refusal"
    );
}

/// The same crash without any mount: with stderr on `/dev/full`, the log line about a refused
/// oversize message panics in `eprintln!` (exit 101) and the peer gets no reply. A peer can
/// thus kill a server whose log device is full.
#[test]
fn an_unwritable_stderr_does_not_kill_the_server() {
    let scratch = Scratch::new("devfull");
    if !Path::new("/dev/full").exists() {
        return skip("dev_full", "this system has no /dev/full");
    }
    let mut p = McpProcess::start_logging_to(scratch.path(), &[], &[], "/dev/full".into());
    let mut line = vec![b'x'; 1_100_000];
    line.push(b'\n');
    assert!(p.send_raw(&line));
    let reply = p
        .recv(replay_support::SAFETY_TIMEOUT)
        .expect("a reply to the oversize line");
    let reply: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(reply["error"]["code"], json!(-32600), "{reply}");
    assert!(
        p.request(1, "ping", json!({})).get("result").is_some(),
        "the server died"
    );
}
