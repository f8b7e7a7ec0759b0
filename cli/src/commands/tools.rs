//! `bernstein mcp tools`: what each tier advertises, from the same catalogue the server uses,
//! with each tier's `tools/list` size in bytes and estimated tokens ([`SIZE_NOTE`]).

use std::process::ExitCode;

use bernstein_core::Tier;
use serde_json::json;

pub fn run(tier: Option<Tier>, json_output: bool) -> Result<ExitCode, String> {
    let catalog = bernstein_domain::catalog();
    let tiers: Vec<Tier> = tier.map_or_else(|| Tier::ALL.to_vec(), |t| vec![t]);
    let mut listing = Vec::new();
    for t in &tiers {
        let mut tools: Vec<_> = catalog
            .tools
            .iter()
            .filter(|s| t.includes(s.tier))
            .collect();
        tools.sort_by_key(|s| s.name);
        listing.push((*t, tools));
    }
    let sizes: Vec<usize> = listing.iter().map(|(t, _)| listing_bytes(*t)).collect();
    if json_output {
        let out: Vec<_> = listing
            .iter()
            .zip(&sizes)
            .map(|((t, tools), bytes)| {
                json!({
                    "tier": t.as_str(),
                    "bytes": bytes,
                    "estimated_tokens": estimated_tokens(*bytes),
                    "tools": tools.iter().map(|s| json!({
                        "name": s.name,
                        "tier": s.tier.as_str(),
                        "title": s.title,
                        "description": s.description,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let value = if tier.is_some() {
            out.into_iter().next().unwrap_or_default()
        } else {
            out.into()
        };
        say!(
            "{}",
            serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let name_width = listing
        .iter()
        .flat_map(|(_, tools)| tools.iter().map(|s| s.name.len()))
        .max()
        .unwrap_or(0);
    for ((t, tools), bytes) in listing.into_iter().zip(sizes) {
        say!(
            "{} tier ({} tools, {bytes} bytes, ~{} tokens)",
            t.as_str(),
            tools.len(),
            estimated_tokens(bytes)
        );
        for s in tools {
            let tier = format!("[{}]", s.tier.as_str());
            say!("  {:<name_width$}  {tier:<10} {}", s.name, s.title);
        }
    }
    say!("{SIZE_NOTE}");
    Ok(ExitCode::SUCCESS)
}

/// How the sizes are measured, printed under the table (and in `--help`).
pub const SIZE_NOTE: &str = "Sizes: bytes of the tier's tools/list `tools` array as the server \
sends it (compact JSON, revision 2025-11-25, cost meter on); tokens estimated as bytes / 4, rounded up.";

/// The estimate rule: one token per four bytes, rounded up.
fn estimated_tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// The advertised listing size of `tier`, from the same server the `mcp` command runs.
fn listing_bytes(tier: Tier) -> usize {
    let mut config = bernstein_core::config::Config::new(Vec::new());
    config.tier = tier;
    bernstein_core::protocol::listing::listing_bytes(&bernstein_domain::Server::new(config))
}
