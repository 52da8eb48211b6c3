//! The core's provider table speaks OpenTelemetry GenAI's well-known `gen_ai.provider.name`
//! values: every value it can put in a record's `provider` is a member of the registry's list
//! (tests/fixtures/genai-registry.yaml, copied from open-telemetry/semantic-conventions-genai,
//! which says "If one of them applies, then the respective value MUST be used").

use llm_rum::core::record::genai::{provider_of_host, PROVIDERS};
use std::collections::BTreeSet;

/// The `value:` of each member of the attribute `key` in the fixture (a plain line scan: the
/// fixture's layout is fixed, and no YAML crate is needed for it).
fn members(key: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/genai-registry.yaml")).unwrap();
    let start = text.find(&format!("  - key: {key}\n")).unwrap_or_else(|| panic!("the fixture defines no {key}"));
    let body = &text[start + 1..];
    let body = &body[..body.find("\n  - key: ").unwrap_or(body.len())];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("value: "))
        .map(|v| v.trim_matches('"').to_string())
        .collect()
}

#[test]
fn every_provider_the_core_names_is_a_well_known_value() {
    let known = members("gen_ai.provider.name");
    assert!(known.len() >= 16 && known.contains("openai") && known.contains("aws.bedrock"), "{known:?}");
    for (prefix, domain, provider) in PROVIDERS {
        assert!(known.contains(provider), "{prefix}…{domain} → {provider}: not a well-known gen_ai.provider.name");
    }
    // The conventions name two hosts themselves: the table agrees.
    assert_eq!(provider_of_host("https://generativelanguage.googleapis.com/v1beta/models/x"), Some("gcp.gemini"));
    assert_eq!(provider_of_host("https://aiplatform.googleapis.com/v1/x"), Some("gcp.vertex_ai"));
}
