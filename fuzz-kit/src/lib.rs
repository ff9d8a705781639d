//! What the property tests ("fuzzing" on the stable toolchain) of every parser an outsider
//! reaches share: the case count (`LATLAB_FUZZ_CASES`, 2000 by default, as CI runs them),
//! byte-level and structural edits of valid documents, arbitrary JSON built from boundary
//! numbers and tokens that break parsers, and the runner that reports how far inputs got.
//! A dev-dependency only: the tests live in each crate's `tests/fuzz.rs`.

use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::{TestCaseError, TestRunner};
use serde_json::Value;
use std::cell::Cell;
use std::time::Instant;

pub fn cases() -> u32 {
    let n = std::env::var("LATLAB_FUZZ_CASES").map(|s| s.parse());
    n.ok().and_then(Result::ok).unwrap_or(2000)
}

pub fn config() -> ProptestConfig {
    let mut c = ProptestConfig::with_cases(cases());
    c.failure_persistence = None;
    c
}

pub fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// Tokens that break parsers: structure, numbers at and past each type's range, NaN-ish
/// spellings, escapes of characters no stored text may hold, multi-byte characters.
pub const TOKENS: &str = r#"{ } [ ] , : " \ null true false 0 -0 -1 1.5 1e308 1e309 -1e309 1e-400
    4294967295 4294967296 18446744073709551615 18446744073709551616 -9223372036854775809 NaN
    -NaN inf -inf "NaN" Infinity "inf" "" "\u0000" "\ud800" "\u202e" é 🚀 ="#;

/// Numbers on and just past the bounds parsers and validators check.
pub const NUMS: &str = "0 -0.0 -1 1 2 3 4 8 16 128 1024 1025 4096 4097 10000 10001 100000 100001
    1000000 1000001 86400 86401 604800 604801 2147483648 4294967295 4294967296 1e-300 0.5
    0.999999 1.0 1000.0 1000.5 2.0000001 99.9 99.99999 100.0 100.5 1e15 1e308 -1e-300 -2.5
    9007199254740993 18446744073709551615 -9223372036854775808";

pub fn tokens(extra: &str) -> Vec<String> {
    let mut t = words(&format!("{TOKENS} {extra}"));
    t.extend([" ", "\n", "\r\n", "\r", "\t", "\u{0}", "\u{202e}", "\u{85}"].map(String::from));
    t
}

pub fn nums() -> Vec<Value> {
    let parse = |n: &str| serde_json::from_str(n).unwrap();
    NUMS.split_whitespace().map(parse).collect()
}

pub fn num(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// A byte-level edit: replace `n` bytes at a position with a piece (`n` = 0 inserts,
/// `usize::MAX` cuts the rest off).
pub type Edit = (Index, usize, Vec<u8>);

pub fn edits(dict: Vec<String>) -> impl Strategy<Value = Vec<Edit>> + Clone {
    let piece = prop_oneof![
        4 => select(dict).prop_map(String::into_bytes),
        1 => proptest::collection::vec(any::<u8>(), 0..8),
        1 => (1usize..300, select(vec!["[", "{\"a\":", "[{\"k\":"])).prop_map(|(n, s)| s.repeat(n).into_bytes()),
    ];
    let n = prop_oneof![8 => 0usize..12, 1 => Just(usize::MAX)];
    proptest::collection::vec((any::<Index>(), n, piece), 1..6)
}

pub fn apply(mut b: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for (i, n, piece) in edits {
        let i = i.index(b.len() + 1);
        b.splice(i..i.saturating_add(*n).min(b.len()), piece.iter().copied());
    }
    b
}

/// Any JSON value, built from boundary numbers, arbitrary strings and `words`.
pub fn arb_json(words: Vec<String>) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(num),
        select(nums()),
        any::<String>().prop_map(Value::from),
        select(words.clone()).prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 24, 5, move |inner| {
        let key = prop_oneof![select(words.clone()), any::<String>()];
        let map = proptest::collection::btree_map(key, inner.clone(), 0..5);
        prop_oneof![
            proptest::collection::vec(inner, 0..5).prop_map(Value::Array),
            map.prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A structural edit of a JSON document. `Tweak` keeps the node's type (so that serde still
/// accepts the document and the checks behind it judge the value): a number or null gets a
/// boundary number, a string gets a text inserted or replaced, a bool flips, an array or
/// object loses an element or (arrays) repeats one.
#[derive(Debug, Clone)]
pub enum ValueEdit {
    Set(Value),
    AddKey(String, Value),
    Tweak(Value, String, bool),
}

pub fn value_edits(keys: Vec<String>, texts: Vec<String>) -> impl Strategy<Value = Vec<(Index, ValueEdit)>> {
    let any_json = || arb_json(keys.clone());
    let text = prop_oneof![4 => select(texts), 1 => any::<String>()];
    let number = prop_oneof![3 => select(nums()), 2 => any::<u32>().prop_map(Value::from), 1 => any::<f64>().prop_map(num)];
    let edit = prop_oneof![
        1 => any_json().prop_map(ValueEdit::Set),
        1 => (select(keys.clone()), any_json()).prop_map(|(k, v)| ValueEdit::AddKey(k, v)),
        8 => (number, text, any::<bool>()).prop_map(|(n, t, b)| ValueEdit::Tweak(n, t, b)),
    ];
    proptest::collection::vec((any::<Index>(), edit), 1..3)
}

/// JSON pointers of every node of `v`.
pub fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    let kids: Vec<(String, &Value)> = match v {
        Value::Array(a) => a.iter().enumerate().map(|(i, x)| (i.to_string(), x)).collect(),
        Value::Object(m) => m.iter().map(|(k, x)| (escape(k), x)).collect(),
        _ => vec![],
    };
    for (k, x) in kids {
        pointers(x, format!("{at}/{k}"), out);
    }
    out.push(at);
}

pub fn apply_value(mut v: Value, edits: &[(Index, ValueEdit)]) -> Value {
    for (i, e) in edits {
        let mut ps = Vec::new();
        pointers(&v, String::new(), &mut ps);
        match (e, v.pointer_mut(&ps[i.index(ps.len())]).unwrap()) {
            (ValueEdit::Set(new), node) => *node = new.clone(),
            (ValueEdit::AddKey(k, x), Value::Object(m)) => drop(m.insert(k.clone(), x.clone())),
            (ValueEdit::Tweak(n, ..), x @ (Value::Number(_) | Value::Null)) => *x = n.clone(),
            (ValueEdit::Tweak(..), Value::Bool(b)) => *b = !*b,
            (ValueEdit::Tweak(_, t, true), Value::String(s)) => {
                let cuts: Vec<usize> = s.char_indices().map(|(k, _)| k).chain([s.len()]).collect();
                s.insert_str(cuts[i.index(cuts.len())], t);
            }
            (ValueEdit::Tweak(_, t, false), Value::String(s)) => *s = t.clone(),
            (ValueEdit::Tweak(.., copy), Value::Array(a)) if !a.is_empty() => {
                let k = i.index(a.len());
                if *copy { a.push(a[k].clone()) } else { drop(a.remove(k)) }
            }
            (ValueEdit::Tweak(..), Value::Object(m)) if !m.is_empty() => {
                let k = m.keys().nth(i.index(m.len())).unwrap().clone();
                m.remove(&k);
            }
            _ => {}
        }
    }
    v
}

/// Bytes as text (invalid UTF-8 replaced), so that failing cases read as documents.
pub fn text(b: Vec<u8>) -> String {
    String::from_utf8_lossy(&b).into_owned()
}

/// Documents for a JSON parser: random bytes, arbitrary JSON, and valid `samples` after
/// byte edits, or after structural edits (then byte edits one time in five).
pub fn json_docs(samples: Vec<Value>, keys: &str, texts: &str) -> impl Strategy<Value = String> {
    let pretty: Vec<Vec<u8>> = samples.iter().map(|v| serde_json::to_vec_pretty(v).unwrap()).collect();
    let (dict, keys, texts) = (tokens(keys), words(keys), words(texts));
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..256),
        1 => arb_json(keys.clone()).prop_map(|v| serde_json::to_vec(&v).unwrap()),
        3 => (select(pretty), edits(dict.clone())).prop_map(|(t, e)| apply(t, &e)),
        8 => (select(samples), value_edits(keys, texts), prop::option::weighted(0.2, edits(dict)))
            .prop_map(|(v, ve, e)| apply(serde_json::to_vec(&apply_value(v, &ve)).unwrap(), &e.unwrap_or_default())),
    ]
    .prop_map(text)
}

/// How far one input got: an index into the `depths` that `fuzz` names.
pub type Checked = Result<usize, TestCaseError>;

/// Runs `check` on `cases()` inputs; prints how many reached each depth (`--show-output`).
pub fn fuzz<S: Strategy>(name: &str, depths: [&str; 3], s: S, check: impl Fn(S::Value) -> Checked) {
    let counts = [Cell::new(0u64), Cell::new(0), Cell::new(0)];
    let start = Instant::now();
    let result = TestRunner::new(config()).run(&s, |v| {
        let d = check(v)?;
        counts[d].set(counts[d].get() + 1);
        Ok(())
    });
    let n = counts.each_ref().map(Cell::get);
    let secs = start.elapsed().as_secs_f64();
    let total: u64 = n.iter().sum();
    println!("{name}: {total} cases in {secs:.1} s; {depths:?}: {n:?}");
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}
