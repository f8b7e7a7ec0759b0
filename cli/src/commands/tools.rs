//! `bernstein mcp tools`: what each tier advertises, from the same catalogue the server uses.

use std::process::ExitCode;

use bernstein_core::Tier;
use serde_json::json;

pub fn run(tier: Option<Tier>, json_output: bool) -> Result<ExitCode, String> {
    let catalog = bernstein_core::domain::catalog();
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
    if json_output {
        let out: Vec<_> = listing
            .iter()
            .map(|(t, tools)| {
                json!({
                    "tier": t.as_str(),
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
    for (t, tools) in listing {
        say!("{} tier ({} tools)", t.as_str(), tools.len());
        for s in tools {
            say!("  {:<28} [{}] {}", s.name, s.tier.as_str(), s.title);
        }
    }
    Ok(ExitCode::SUCCESS)
}
