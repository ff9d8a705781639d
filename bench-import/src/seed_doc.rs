//! The seed study (`shared/seed/qwen3-8b-h100-latency.txt`, GPUStack's "Qwen3-8B on H100"
//! latency write-up, in Japanese) into runs with their engine, command and concurrency,
//! plus its optimization ladder. `data/seed/qwen3-8b-h100-gpustack.json` is this parser's
//! output; a test regenerates it from the document, so no number in it is typed by hand.
//!
//! The document's shape: numbered sections ("3. 量子化"), each with a launch command after
//! "推論サービスのスクリプト" and one or more result blocks, each optionally preceded by a
//! "# ..." note naming the variant (flags that replace the command's, an attention
//! backend, or "BS=N"); a closing sweep section with a baseline and an optimized command.

use crate::request::{ImportConfig, ImportedRun, build_run};
use crate::{ImportError, text_block};
use serde::{Deserialize, Serialize};

/// The name latlab gives the reference comparison built from the document.
pub const TITLE: &str = "Qwen3-8B on H100 (GPUStack study)";
/// Path of the document relative to the shared folder, as cited in every run's source.
pub const DOC_PATH: &str = "shared/seed/qwen3-8b-h100-latency.txt";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedStudy {
    pub title: String,
    /// The document's own title line.
    pub document_title: String,
    pub hardware: String,
    /// The `vllm bench serve` command the study used for every run.
    pub bench_command: String,
    /// Runs in document order.
    pub runs: Vec<ImportedRun>,
    /// The study's starting point ("基準設定（最適化なしの vLLM）"): the first run of its
    /// first section, which every ladder step is measured from.
    pub ladder_baseline: usize,
    /// The study's optimization table, each row tied to the run it kept.
    pub ladder: Vec<LadderStep>,
}

/// One row of the study's optimization table ("最適化項目の一覧").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderStep {
    /// The row's item in English, e.g. "Quantization": what charts draw (a viewer without
    /// CJK fonts would see boxes for the original).
    pub item: String,
    /// The row's item as the study printed it, e.g. "量子化".
    pub original: String,
    /// What the study printed as the gain ("+25.8%"), `None` where it printed "-" (not kept).
    pub published_gain: Option<String>,
    /// The section the item names, e.g. "3. 量子化".
    pub section: Option<String>,
    /// Index in `runs` of the configuration the study kept for this step: the first run of
    /// the section on the engine the next section goes on with.
    pub run: Option<usize>,
}

/// The data file's text: pretty JSON with a final newline, `null` fields left out (they
/// read back as `None`), so that a field added to `RunSpec` later with a `None` default
/// does not change the file.
pub fn to_json(study: &SeedStudy) -> String {
    fn prune(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.retain(|_, x| !x.is_null());
                m.values_mut().for_each(prune);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(prune),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(study).expect("a SeedStudy always serializes");
    prune(&mut v);
    let mut s = serde_json::to_string_pretty(&v).expect("a Value always serializes");
    s.push('\n');
    s
}

/// One parsed result with where it sat in the document.
struct Found {
    line: usize,
    section: String,
    section_command: String,
    variant: Option<String>,
    parsed: crate::Parsed,
}

const ENGINES: [(&str, &str); 3] =
    [("vllm serve", "vLLM"), ("sglang", "SGLang"), ("trtllm-serve", "TensorRT-LLM")];
const COMMAND_MARKERS: [&str; 3] =
    ["推論サービスのスクリプト", "基準設定の推論スクリプト", "最適化後の推論スクリプト"];

/// English names of the optimization table's items (the document's own words, translated).
const STEP_NAMES: [(&str, &str); 6] = [
    ("エンジンの選択", "Engine choice"),
    ("量子化", "Quantization"),
    ("投機的デコーディング", "Speculative decoding"),
    ("CUDA graph の最大バッチサイズ", "CUDA graph max batch size"),
    ("アテンションバックエンド", "Attention backend"),
    ("Torch.compile", "torch.compile"),
];

/// The English name of a table item; an item in English already stays as it is.
fn step_name(item: &str) -> Option<String> {
    STEP_NAMES
        .iter()
        .find(|(ja, _)| *ja == item)
        .map(|(_, en)| en.to_string())
        .or_else(|| item.is_ascii().then(|| item.to_string()))
}

fn engine_of(command: &str) -> Option<&'static str> {
    ENGINES.iter().find(|(needle, _)| command.contains(needle)).map(|(_, e)| *e)
}

/// "1. 推論エンジンの選択" (a numbered heading; not "1\t`vllm serve`", a table cell).
fn numbered_heading(line: &str) -> bool {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && line[digits..].starts_with(". ")
}

/// The command after a marker: "1\t`cmd`" (a one-cell table) or lines joined across "\".
fn read_command(lines: &[&str], from: usize) -> Option<(String, usize)> {
    let mut i = from;
    while i < lines.len() && lines[i].trim().is_empty() {
        i += 1;
    }
    let first = lines.get(i)?.trim();
    if let Some(rest) = first.strip_prefix("1\t") {
        return Some((rest.trim().trim_matches('`').to_string(), i));
    }
    let mut parts = vec![];
    loop {
        let l = lines.get(i)?.trim();
        match l.strip_suffix('\\') {
            Some(head) => parts.push(head.trim().to_string()),
            None => {
                parts.push(l.to_string());
                break;
            }
        }
        i += 1;
    }
    Some((parts.join(" "), i))
}

/// The command a variant ran: flags in the note replace the command's flags of the same
/// family (`--speculative-*`); a bare word replaces the value of the command's last flag
/// (the attention section's "# flashinfer"); "BS=N" changes only the benchmark.
fn effective_command(command: &str, variant: Option<&str>) -> String {
    let Some(v) = variant else { return command.to_string() };
    if v.starts_with("BS=") {
        return command.to_string();
    }
    let tokens: Vec<&str> = command.split_whitespace().collect();
    if v.starts_with("--") {
        let family = |t: &str| t.strip_prefix("--").and_then(|f| f.split('-').next()).map(str::to_string);
        let fams: Vec<String> =
            v.split_whitespace().filter_map(|t| if t.starts_with("--") { family(t) } else { None }).collect();
        let mut kept = Vec::new();
        let mut skip_value = false;
        for t in &tokens {
            if t.starts_with("--") {
                skip_value = family(t).is_some_and(|f| fams.contains(&f));
                if !skip_value {
                    kept.push(*t);
                }
            } else if !skip_value {
                kept.push(*t);
            }
        }
        return format!("{} {v}", kept.join(" "));
    }
    match tokens.iter().rposition(|t| t.starts_with("--")) {
        Some(k) if k + 1 < tokens.len() => {
            let mut t: Vec<&str> = tokens.clone();
            t[k + 1] = v;
            t.join(" ")
        }
        _ => format!("{command} {v}"),
    }
}

/// The model a command serves (`--model-path X`, `--model X`, `vllm serve X`, `trtllm-serve X`).
fn model_of(command: &str) -> Option<String> {
    let t: Vec<&str> = command.split_whitespace().collect();
    t.windows(2)
        .find(|w| matches!(w[0], "--model-path" | "--model" | "serve" | "trtllm-serve"))
        .map(|w| w[1].to_string())
}

/// A chart-sized label: engine, FP8, and the flags shortened ("steps=4").
fn label_of(engine: &str, command: &str, variant: Option<&str>, sweep_part: Option<&str>) -> String {
    let mut out = vec![engine.to_string()];
    if model_of(command).is_some_and(|m| m.ends_with("-FP8")) {
        out.push("FP8".into());
    }
    let t: Vec<&str> = command.split_whitespace().collect();
    let mut i = 0;
    while i < t.len() {
        if let Some(flag) = t[i].strip_prefix("--").filter(|f| !matches!(*f, "model" | "model-path")) {
            let name = match flag.trim_start_matches("speculative-").trim_start_matches("num-") {
                "draft-model-path" => "draft",
                "attention-backend" => "attn",
                "eagle-topk" => "topk",
                "enable-torch-compile" => "torch.compile",
                other => other,
            };
            match t.get(i + 1).filter(|v| !v.starts_with("--")) {
                // The algorithm reads best bare ("EAGLE3"); a draft model by its owner.
                Some(v) if name == "algorithm" => {
                    out.push(v.to_string());
                    i += 1;
                }
                Some(v) => {
                    let v = if name == "draft" { v.split('/').next().unwrap_or(v) } else { v };
                    out.push(format!("{name}={v}"));
                    i += 1;
                }
                None => out.push(name.to_string()),
            }
        }
        i += 1;
    }
    if let Some(p) = sweep_part {
        out.push(p.to_string());
    }
    if let Some(v) = variant.filter(|v| v.starts_with("BS=")) {
        out.push(v.to_string());
    }
    out.join(" ")
}

/// After `heading`, the first non-empty line.
fn value_after(lines: &[&str], heading: &str) -> Option<String> {
    let i = lines.iter().position(|l| l.trim() == heading)?;
    lines[i + 1..].iter().map(|l| l.trim()).find(|l| !l.is_empty()).map(str::to_string)
}

/// Parses the whole document. Every block becomes a run; a block the parser cannot read
/// fails the whole document with its line.
pub fn parse(doc: &str) -> Result<SeedStudy, ImportError> {
    let lines: Vec<&str> = doc.lines().collect();
    let document_title = lines.first().map(|l| l.trim().to_string()).unwrap_or_default();
    let hw_line = value_after(&lines, "ハードウェア")
        .ok_or_else(|| ImportError::new("no ハードウェア (hardware) section"))?;
    let hardware = match hw_line.trim_end_matches('。').strip_prefix("単一の") {
        Some(rest) => format!("1x {}", rest.trim()),
        None => hw_line.trim_end_matches('。').to_string(),
    };
    let bench_command = lines
        .iter()
        .find(|l| l.trim_start().starts_with("vllm bench serve"))
        .map(|l| l.trim().to_string())
        .ok_or_else(|| ImportError::new("no `vllm bench serve` command"))?;
    let versions: Vec<(String, String)> = lines
        .iter()
        .filter_map(|l| l.split_once(": v").map(|(e, v)| (e.trim().to_string(), format!("v{}", v.trim()))))
        .filter(|(e, _)| ENGINES.iter().any(|(_, name)| name == e))
        .collect();

    let mut found: Vec<Found> = Vec::new();
    let mut sections: Vec<(String, Option<String>)> = Vec::new(); // (title, first command)
    let (mut section, mut command, mut sweep_part) = (String::new(), String::new(), None::<String>);
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        if numbered_heading(l) || l == "その他のベンチマークケース" {
            section = l.to_string();
            sections.push((section.clone(), None));
            sweep_part = None;
        } else if COMMAND_MARKERS.contains(&l) {
            let (c, end) = read_command(&lines, i + 1)
                .ok_or_else(|| ImportError::at(i + 1, "a command marker with no command after it"))?;
            command = c;
            if let Some(s) = sections.last_mut() {
                s.1.get_or_insert(command.clone());
            }
            sweep_part = match l {
                "基準設定の推論スクリプト" => Some("baseline".into()),
                "最適化後の推論スクリプト" => Some("optimized".into()),
                _ => None,
            };
            i = end;
        } else if text_block::is_block_start(l) {
            if section.is_empty() || command.is_empty() {
                return Err(ImportError::at(i + 1, "a result block before any section and command"));
            }
            let variant = lines[..i]
                .iter()
                .rev()
                .map(|l| l.trim())
                .find(|l| !l.is_empty())
                .and_then(|p| p.strip_prefix("# "))
                .map(str::to_string);
            let (parsed, end) = text_block::parse_block_at(&lines, i)?;
            let sec = match &sweep_part {
                Some(p) => format!("{section} ({p})"),
                None => section.clone(),
            };
            found.push(Found {
                line: i + 1,
                section: sec,
                section_command: command.clone(),
                variant,
                parsed,
            });
            i = end;
        }
        i += 1;
    }
    if found.is_empty() {
        return Err(ImportError::new("the document has no result blocks"));
    }

    let mut runs = Vec::with_capacity(found.len());
    for f in found {
        let cmd = effective_command(&f.section_command, f.variant.as_deref());
        let engine = engine_of(&cmd)
            .ok_or_else(|| ImportError::at(f.line, format!("no known engine in the command {cmd:?}")))?;
        let sweep_part = f.section.rsplit_once(" (").map(|(_, p)| p.trim_end_matches(')'));
        let config = ImportConfig {
            engine: engine.to_string(),
            model: model_of(&cmd),
            label: label_of(engine, &cmd, f.variant.as_deref(), sweep_part),
            source: Some(format!("{DOC_PATH}, line {}", f.line)),
            command: Some(cmd.clone()),
            engine_version: versions.iter().find(|(e, _)| e == engine).map(|(_, v)| v.clone()),
            hardware: Some(hardware.clone()),
            optimization: Some(f.section.clone()),
            variant: f.variant.clone(),
            dataset: None,
            num_prompts: None,
            sampling: None,
        };
        runs.push(build_run(f.parsed, &config).map_err(|e| ImportError::at(f.line, e.to_string()))?);
    }
    let ladder = ladder(&lines, &sections, &runs)?;
    Ok(SeedStudy {
        title: TITLE.to_string(),
        document_title,
        hardware,
        bench_command,
        runs,
        ladder_baseline: 0,
        ladder,
    })
}

fn imported(r: &ImportedRun) -> &bench_types::imported::ImportedTarget {
    match &r.spec.target {
        bench_types::Target::Imported(t) => t,
        _ => unreachable!("seed runs are imported"),
    }
}

/// The optimization table, rows tied to sections by name and to the run each step kept.
fn ladder(
    lines: &[&str],
    sections: &[(String, Option<String>)],
    runs: &[ImportedRun],
) -> Result<Vec<LadderStep>, ImportError> {
    let start = lines
        .iter()
        .position(|l| l.trim() == "最適化項目の一覧")
        .ok_or_else(|| ImportError::new("no 最適化項目の一覧 (optimization table)"))?;
    let mut steps = Vec::new();
    for (row, l) in
        lines[start + 1..].iter().map(|l| l.trim()).enumerate().skip_while(|(_, l)| l.is_empty()).skip(1)
    {
        let Some((item, gain)) = l.split_once('\t') else { break };
        let (item, gain) = (item.trim(), gain.trim());
        let k = sections.iter().position(|(title, _)| title.contains(item));
        let published_gain = (gain != "-").then(|| gain.to_string());
        let run = match (k, &published_gain) {
            (Some(k), Some(_)) => {
                let title = &sections[k].0;
                let next_engine = sections.get(k + 1).and_then(|(_, c)| c.as_deref()).and_then(engine_of);
                let in_section =
                    |r: &&ImportedRun| imported(r).optimization.as_deref() == Some(title.as_str());
                runs.iter()
                    .position(|r| in_section(&r) && next_engine.is_none_or(|e| imported(r).engine == e))
                    .or_else(|| runs.iter().position(|r| in_section(&r)))
            }
            _ => None,
        };
        let name = step_name(item).ok_or_else(|| {
            ImportError::at(
                start + 2 + row,
                format!("no English name for the optimization item {item:?} (add one to STEP_NAMES)"),
            )
        })?;
        steps.push(LadderStep {
            item: name,
            original: item.to_string(),
            published_gain,
            section: k.map(|k| sections[k].0.clone()),
            run,
        });
    }
    if steps.is_empty() {
        return Err(ImportError::at(start + 1, "the optimization table has no rows"));
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_replace_the_flags_they_name() {
        let c = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8 --speculative-algorithm EAGLE3 --speculative-num-steps 4";
        assert_eq!(
            effective_command(c, Some("--speculative-algorithm EAGLE3 --speculative-draft-model-path X")),
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8 --speculative-algorithm EAGLE3 --speculative-draft-model-path X"
        );
        let a = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8 --attention-backend triton";
        assert!(effective_command(a, Some("flashinfer")).ends_with("--attention-backend flashinfer"));
        assert_eq!(effective_command(a, Some("BS=2")), a);
        assert_eq!(model_of("vllm serve Qwen/Qwen3-8B").as_deref(), Some("Qwen/Qwen3-8B"));
    }
}
