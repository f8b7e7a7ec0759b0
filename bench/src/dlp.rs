//! DLP redaction speed on 1 MiB adversarial texts: shapes that would be quadratic if a failed
//! match attempt rescanned its run, shapes that make the redactor build its decoded views
//! (escapes, line breaks after key prefixes) or cut the text at placeholders, plus plain prose
//! and texts full of real matches.

use std::time::Instant;

use bernstein_domain::dlp::redact;

const MIB: usize = 1 << 20;

fn mib_of(unit: &str) -> String {
    let mut s = unit.repeat(MIB / unit.len() + 1);
    s.truncate(MIB);
    while !s.is_char_boundary(s.len()) {
        s.pop();
    }
    s
}

pub fn redaction_speed() {
    println!("\n## DLP redaction, 1 MiB texts (best of 5)\n");
    println!("| text | time | MiB/s | spans redacted |\n|---|---|---|---|");
    let shapes = [
        ("prose", "The quick brown fox jumps over the lazy dog. "),
        (
            "prose over lines",
            "The quick brown fox\njumps over the lazy dog.\n",
        ),
        ("`eyJ-` repeated (JWT header starts)", "eyJ-"),
        (
            "`eyJaaaaaaaaaa.bb.` repeated (two-segment JWTs)",
            "eyJaaaaaaaaaa.bb.",
        ),
        ("one 1 MiB base64url run after `eyJ`", "a"),
        ("`sk-a` repeated", "sk-a"),
        ("`Bearer \\n` repeated", "Bearer \n"),
        ("`password:a ` repeated", "password:a "),
        ("`-----BEGIN ` repeated", "-----BEGIN "),
        ("`a://` repeated", "a://"),
        ("`AKIA` repeated", "AKIA"),
        ("`token=\"` repeated (unterminated quotes)", "token=\""),
        (
            "secrets: `password=EXAMPLE-1 ` repeated",
            "password=EXAMPLE-1 ",
        ),
        ("`%41` repeated (percent escapes)", "%41"),
        ("`\\u0022` repeated (JSON escapes)", "\\u0022"),
        (
            "`sk-ant-a\\n` repeated (breaks after a key prefix)",
            "sk-ant-a\n",
        ),
        ("`[REDACTED:a] ` repeated (placeholders)", "[REDACTED:a] "),
        (
            "secrets: `\"password\":\"x\\\"y\", ` repeated",
            "\"password\":\"x\\\"y\", ",
        ),
        (
            "secrets: `password%3DEXAMPLE-1 ` repeated",
            "password%3DEXAMPLE-1 ",
        ),
        (
            "secrets: wrapped `sk-ant-api03-\\nEXAMPLE…` repeated",
            "sk-ant-api03-\nEXAMPLEexample0123456789\n",
        ),
    ];
    for (name, unit) in shapes {
        let text = if unit == "a" {
            format!("eyJ{}", mib_of("a"))
        } else {
            mib_of(unit)
        };
        let mut best = f64::MAX;
        let mut count = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let out = std::hint::black_box(redact(std::hint::black_box(&text)));
            best = best.min(t.elapsed().as_secs_f64());
            count = out.count;
        }
        println!(
            "| {name} | {:.1} ms | {:.0} | {count} |",
            best * 1e3,
            text.len() as f64 / MIB as f64 / best
        );
    }
}
