//! Request-rate sweeps (`load.request_rates`): `vllm bench serve` takes one
//! `--request-rate`; a list here makes one run per rate, grouped into a comparison exactly
//! as a list of concurrencies is. `None` in the list is `inf` (every request released at
//! t=0), written `"inf"` in JSON since JSON has no infinity.

use crate::spec::RunSpec;
use crate::validate::ValidationErrors;
use crate::validate::limits::{MAX_REQUEST_RATE, MAX_SWEEP_VALUES};

/// "1, 2, 4, inf": the form's text for a list of rates.
pub fn format_rates(rates: &[Option<f64>]) -> String {
    let parts: Vec<String> = rates.iter().map(|r| r.map_or("inf".to_string(), |r| r.to_string())).collect();
    parts.join(", ")
}

/// Parses "1, 2, 4, inf" (commas or spaces between values). Every bad value is named at
/// once, not only the first.
pub fn parse_rates(text: &str) -> Result<Vec<Option<f64>>, String> {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for part in text.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()) {
        match part {
            "inf" | "Inf" | "INF" | "infinity" => out.push(None),
            p => match p.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 && v <= MAX_REQUEST_RATE => out.push(Some(v)),
                Ok(v) if v.is_infinite() => out.push(None),
                Ok(_) => bad.push(format!("{p} is out of range (above 0, at most {MAX_REQUEST_RATE})")),
                Err(_) => bad.push(format!("{p:?} is not a number of requests/s or inf")),
            },
        }
    }
    if bad.is_empty() { Ok(out) } else { Err(format!("{}; use e.g. 1, 2, 4, inf", bad.join("; "))) }
}

/// The rate sweep's own checks, each naming its field.
///
/// A rate list and a concurrency list together are refused rather than crossed: a grid
/// multiplies runs (32 x 32 values would queue 1024 in one submission), and a comparison's
/// latency-throughput curve joins one configuration's runs along one load axis, which a
/// grid would interleave. One concurrency cap under a rate sweep is fine (vLLM's usual
/// `--max-concurrency 64 --request-rate ...`); a grid is one rate sweep per cap.
pub(crate) fn validate_into(spec: &RunSpec, e: &mut ValidationErrors) {
    let rates = &spec.load.request_rates;
    if rates.is_empty() {
        return;
    }
    const FIELD: &str = "load.request_rates";
    if rates.len() > MAX_SWEEP_VALUES {
        e.push(FIELD, format!("at most {MAX_SWEEP_VALUES} values"));
    } else if let Some(bad) =
        rates.iter().flatten().find(|r| !(r.is_finite() && **r > 0.0 && **r <= MAX_REQUEST_RATE))
    {
        e.push(FIELD, format!("{bad} is out of range: each rate must be above 0 and at most {MAX_REQUEST_RATE} requests/s (or inf)"));
    } else if (1..rates.len()).any(|i| rates[..i].contains(&rates[i])) {
        e.push(FIELD, "values must not repeat");
    }
    if spec.load.max_concurrency.len() > 1 {
        e.push(
            FIELD,
            "sweep one load setting at a time: several request rates or several max concurrency values, not both (one concurrency cap may stay)",
        );
    }
    if spec.load.request_rate.is_some() {
        e.push("load.request_rate", "must be empty when load.request_rates sweeps the rate");
    }
    if spec.ramp_up.is_some() {
        e.push(FIELD, "must be empty with a ramp-up: the ramp sets the rate");
    }
}

/// Serde for `Vec<Option<f64>>` as `[1, 2.5, "inf"]` (`null` is read as inf too).
pub(crate) mod serde_rates {
    use serde::de::{self, Deserializer, SeqAccess, Visitor};
    use serde::ser::{SerializeSeq, Serializer};
    use std::fmt;

    pub fn serialize<S: Serializer>(rates: &[Option<f64>], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(rates.len()))?;
        for r in rates {
            match r {
                Some(v) => seq.serialize_element(v)?,
                None => seq.serialize_element("inf")?,
            }
        }
        seq.end()
    }

    struct Rate(Option<f64>);

    impl<'de> serde::Deserialize<'de> for Rate {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Rate;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a request rate: a number of requests/s or \"inf\"")
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<Rate, E> {
                    Ok(Rate(Some(v)))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Rate, E> {
                    Ok(Rate(Some(v as f64)))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Rate, E> {
                    Ok(Rate(Some(v as f64)))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Rate, E> {
                    match v {
                        "inf" => Ok(Rate(None)),
                        _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                    }
                }
                fn visit_unit<E: de::Error>(self) -> Result<Rate, E> {
                    Ok(Rate(None))
                }
                fn visit_none<E: de::Error>(self) -> Result<Rate, E> {
                    Ok(Rate(None))
                }
            }
            d.deserialize_any(V)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Option<f64>>, D::Error> {
        struct Seq;
        impl<'de> Visitor<'de> for Seq {
            type Value = Vec<Option<f64>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of request rates, e.g. [1, 2, 4, \"inf\"]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(Rate(r)) = seq.next_element()? {
                    out.push(r);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(Seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::RunSpec;
    use serde_json::json;

    fn spec() -> RunSpec {
        serde_json::from_value(json!({
            "target": {"kind": "external", "base_url": "http://h"}, "model": "m", "num_prompts": 10,
            "dataset": {"kind": "random", "input_len": 4, "output_len": 2},
            "load": {"max_concurrency": [8], "request_rates": [1, 2.5, "inf"], "burstiness": 0.5}
        }))
        .unwrap()
    }

    #[test]
    fn rates_read_and_write_with_inf_as_a_word() {
        let s = spec();
        assert_eq!(s.load.request_rates, vec![Some(1.0), Some(2.5), None]);
        s.validate().unwrap();
        let back = serde_json::to_value(&s).unwrap();
        assert_eq!(back["load"]["request_rates"], json!([1.0, 2.5, "inf"]));
        assert_eq!(serde_json::from_value::<RunSpec>(back).unwrap(), s);
        let bad = json!({"max_concurrency": [], "request_rates": ["fast"]});
        let e = serde_json::from_value::<crate::LoadProfile>(bad).unwrap_err().to_string();
        assert!(e.contains("a number of requests/s or \"inf\""), "{e}");
    }

    /// Each run of a sweep says the one rate it ran at, and no list: a stored single run
    /// reads exactly as one created with `request_rate` alone.
    #[test]
    fn a_rate_sweep_expands_to_one_run_per_rate() {
        let s = spec();
        assert_eq!(s.load_label(), "BS=8 rate=1,2.5,inf/s");
        let runs = s.expand();
        assert_eq!(runs.len(), 3);
        for (run, rate) in runs.iter().zip([Some(1.0), Some(2.5), None]) {
            assert_eq!((run.load.request_rate, run.load.request_rates.len()), (rate, 0));
            assert_eq!(run.load.max_concurrency, vec![8]);
            assert_eq!(run.load.burstiness, 0.5);
            assert!(serde_json::to_value(run).unwrap()["load"].get("request_rates").is_none());
            run.validate().unwrap();
        }
        assert_eq!(runs[1].load_label(), "BS=8 rate=2.5/s");
        let mut one = spec();
        one.load.request_rates = vec![Some(4.0)];
        assert_eq!(one.expand()[0].load.request_rate, Some(4.0));
        assert!(one.expand()[0].load.request_rates.is_empty());
    }

    #[test]
    fn rates_and_concurrencies_are_not_swept_together() {
        let mut s = spec();
        s.load.max_concurrency = vec![1, 2];
        let e = s.validate().unwrap_err();
        assert!(e.for_field("load.request_rates").unwrap().contains("not both"), "{e}");
        let mut s = spec();
        s.load.request_rate = Some(3.0);
        s.load.request_rates = vec![Some(1.0), Some(1.0), Some(-2.0)];
        let e = s.validate().unwrap_err();
        assert!(e.for_field("load.request_rates").unwrap().contains("-2 is out of range"), "{e}");
        assert!(e.for_field("load.request_rate").unwrap().contains("request_rates"), "{e}");
        s.load.request_rate = None;
        s.load.request_rates = vec![None, Some(2.0), None];
        assert_eq!(s.validate().unwrap_err().for_field("load.request_rates"), Some("values must not repeat"));
    }

    #[test]
    fn the_forms_text_parses_and_prints_back() {
        let rates = parse_rates(" 1, 2 4,inf ").unwrap();
        assert_eq!(rates, vec![Some(1.0), Some(2.0), Some(4.0), None]);
        assert_eq!(format_rates(&rates), "1, 2, 4, inf");
        assert_eq!(parse_rates(&format_rates(&[Some(0.25), None])).unwrap(), vec![Some(0.25), None]);
        let e = parse_rates("1, fast, 0, -3").unwrap_err();
        assert!(e.contains("\"fast\" is not") && e.contains("0 is out of range") && e.contains("-3"), "{e}");
        assert_eq!(parse_rates("").unwrap(), vec![]);
    }
}
