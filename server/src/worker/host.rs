//! What a worker's host decides, never a request: which engines it may launch and with which
//! executables, the user they run as, the environment they get, the folders runs may read
//! files from, and the API keys runs may send. Read once from the environment at start.

use super::file_roots::FileRoots;
use crate::unix_user::{UnixUser, lookup_user, running_as_root};
use anyhow::{Context, bail};
use bench_types::launched::LaunchedEngine;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A value that must never be printed (Debug shows only its length).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// Variables every engine gets from the worker's environment when set: what Python, CUDA
/// and Hugging Face need to find their libraries and caches. Nothing else passes unless
/// the operator lists it in `LATLAB_ENGINE_ENV`.
const BASE_ENV: &[&str] = &[
    "PATH",
    "CUDA_VISIBLE_DEVICES",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_HUB_OFFLINE",
    "HUGGINGFACE_HUB_CACHE",
    "TRANSFORMERS_CACHE",
    "TRANSFORMERS_OFFLINE",
];

/// True for the variables that hold latlab's own secrets: never passed to an engine, never
/// sendable as an API key.
pub fn is_secret_var(name: &str) -> bool {
    name == "LATLAB_API_TOKEN"
        || name.starts_with(bench_types::validate::API_KEY_ENV_PREFIX)
        || name == "DATABASE_URL"
        || name.starts_with("PG")
}

#[derive(Debug, Clone)]
pub struct WorkerHost {
    /// `LATLAB_LAUNCH_ENGINES` (default `vllm,sglang,trtllm`): engines this worker starts.
    pub launchable: Vec<LaunchedEngine>,
    /// `LATLAB_VLLM_BIN` (`vllm`), `LATLAB_SGLANG_PYTHON` (`python3`, run as
    /// `-m sglang.launch_server`), `LATLAB_TRTLLM_BIN` (`trtllm-serve`): looked up in PATH
    /// when not absolute.
    pub vllm: PathBuf,
    pub sglang_python: PathBuf,
    pub trtllm: PathBuf,
    /// `LATLAB_ENGINE_USER`: who engines run as. Default, when latlab runs as root:
    /// `nobody`. `None`: as latlab itself (not root, or the operator chose `root`).
    pub engine_user: Option<UnixUser>,
    /// Engines' home and working directory (`<data dir>/engine-home`), owned by the engine
    /// user: caches (torch.compile, Triton, kernels) persist there between runs.
    pub engine_home: PathBuf,
    /// The environment engines start with (besides HOME, CUDA_VISIBLE_DEVICES and what the
    /// launch itself sets), captured at start.
    pub engine_env: Vec<(String, String)>,
    /// `LATLAB_*` settings passed to latlab-engine only (its tuning and cache knobs).
    pub native_env: Vec<(String, String)>,
    /// Where datasets, tokenizers and checkpoints may be read from.
    pub roots: FileRoots,
    /// `LATLAB_KEY_*`: API keys runs may name in `target.api_key_env`.
    pub api_keys: BTreeMap<String, Secret>,
    /// Every secret value the worker knows (API token, keys, database URL): masked in
    /// engine logs should an engine ever print one.
    pub secrets: Vec<Secret>,
}

impl WorkerHost {
    /// Reads the host's settings. `vars` is the whole environment (for the pass-through
    /// lists and the keys); `data_dir` holds the engines' home.
    pub fn from_lookup(
        get: &dyn Fn(&str) -> Option<String>,
        vars: &[(String, String)],
        data_dir: &std::path::Path,
    ) -> anyhow::Result<Self> {
        let set = |k: &str| get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let launchable = match set("LATLAB_LAUNCH_ENGINES") {
            None => vec![LaunchedEngine::Vllm, LaunchedEngine::Sglang, LaunchedEngine::TrtLlm],
            Some(v) if v == "none" => vec![],
            Some(v) => v
                .split(',')
                .map(|e| match e.trim() {
                    "vllm" => Ok(LaunchedEngine::Vllm),
                    "sglang" => Ok(LaunchedEngine::Sglang),
                    "trtllm" => Ok(LaunchedEngine::TrtLlm),
                    other => bail!(
                        "LATLAB_LAUNCH_ENGINES: {other:?} is not an engine (vllm, sglang, trtllm, or none)"
                    ),
                })
                .collect::<anyhow::Result<_>>()?,
        };
        let program = |k: &str, default: &str| -> anyhow::Result<PathBuf> {
            let v = set(k).unwrap_or_else(|| default.to_string());
            if v.contains(char::is_whitespace) || (!v.starts_with('/') && v.contains('/')) {
                bail!("{k}={v:?} must be an absolute path or a program name found in PATH");
            }
            Ok(PathBuf::from(v))
        };
        let root = running_as_root();
        let engine_user = match set("LATLAB_ENGINE_USER") {
            None if root => Some(lookup_user("nobody").context(
                "latlab runs as root and engines must not: set LATLAB_ENGINE_USER to an unprivileged user",
            )?),
            None => None,
            Some(name) if root && name == "root" => None,
            Some(name) if root => {
                Some(lookup_user(&name).with_context(|| format!("LATLAB_ENGINE_USER={name:?}"))?)
            }
            Some(name) => {
                let me = std::env::var("USER").unwrap_or_default();
                if name != me {
                    bail!(
                        "LATLAB_ENGINE_USER={name:?}: only a worker running as root can start engines as another user"
                    );
                }
                None
            }
        };
        let mut pass: Vec<String> = BASE_ENV.iter().map(|s| s.to_string()).collect();
        if let Some(extra) = set("LATLAB_ENGINE_ENV") {
            for name in extra.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                if is_secret_var(name) || name.starts_with("LATLAB_") {
                    bail!(
                        "LATLAB_ENGINE_ENV may not pass {name}: latlab's own settings and secrets never reach an engine"
                    );
                }
                pass.push(name.to_string());
            }
        }
        let engine_env: Vec<(String, String)> =
            vars.iter().filter(|(k, _)| pass.contains(k)).cloned().collect();
        let native_env: Vec<(String, String)> = vars
            .iter()
            .filter(|(k, _)| k.starts_with("LATLAB_") && !is_secret_var(k) && k != "LATLAB_ASSETS_DIR")
            .cloned()
            .collect();
        let api_keys: BTreeMap<String, Secret> = vars
            .iter()
            .filter(|(k, v)| k.starts_with(bench_types::validate::API_KEY_ENV_PREFIX) && !v.is_empty())
            .map(|(k, v)| (k.clone(), Secret(v.clone())))
            .collect();
        let mut secrets: Vec<Secret> = api_keys.values().cloned().collect();
        for k in ["LATLAB_API_TOKEN", "DATABASE_URL"] {
            if let Some(v) = set(k).filter(|v| v.len() >= 8) {
                secrets.push(Secret(v));
            }
        }
        Ok(WorkerHost {
            launchable,
            vllm: program("LATLAB_VLLM_BIN", "vllm")?,
            sglang_python: program("LATLAB_SGLANG_PYTHON", "python3")?,
            trtllm: program("LATLAB_TRTLLM_BIN", "trtllm-serve")?,
            engine_user,
            engine_home: data_dir.join("engine-home"),
            engine_env,
            native_env,
            roots: FileRoots::from_lookup(get)?,
            api_keys,
            secrets,
        })
    }

    /// The executable this host runs for `engine`, or why it does not launch it.
    pub fn program_for(&self, engine: LaunchedEngine) -> Result<PathBuf, String> {
        if !self.launchable.contains(&engine) {
            return Err(format!(
                "this worker does not launch {} (its operator allows: {}; LATLAB_LAUNCH_ENGINES)",
                engine.as_str(),
                if self.launchable.is_empty() {
                    "none".to_string()
                } else {
                    self.launchable.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")
                }
            ));
        }
        Ok(match engine {
            LaunchedEngine::Vllm => self.vllm.clone(),
            LaunchedEngine::Sglang => self.sglang_python.clone(),
            LaunchedEngine::TrtLlm => self.trtllm.clone(),
        })
    }

    /// The API key a run names, or an error that says nothing about other variables.
    pub fn api_key(&self, name: &str) -> Result<&Secret, String> {
        self.api_keys.get(name).ok_or_else(|| {
            format!("no API key named {name} is configured on this worker (its operator opts keys in as {}<NAME> variables)", bench_types::validate::API_KEY_ENV_PREFIX)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn host(pairs: &[(&str, &str)]) -> anyhow::Result<WorkerHost> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let vars: Vec<(String, String)> = m.clone().into_iter().collect();
        WorkerHost::from_lookup(&|k| m.get(k).cloned(), &vars, std::path::Path::new("/var/lib/latlab"))
    }

    #[test]
    fn engines_and_programs_come_from_the_host() {
        let h = host(&[("LATLAB_VLLM_BIN", "/opt/vllm/bin/vllm"), ("LATLAB_LAUNCH_ENGINES", "vllm,sglang")])
            .unwrap();
        assert_eq!(h.program_for(LaunchedEngine::Vllm).unwrap(), PathBuf::from("/opt/vllm/bin/vllm"));
        assert_eq!(h.program_for(LaunchedEngine::Sglang).unwrap(), PathBuf::from("python3"));
        assert!(h.program_for(LaunchedEngine::TrtLlm).unwrap_err().contains("does not launch trtllm"));
        assert!(host(&[("LATLAB_LAUNCH_ENGINES", "vllm,bash")]).unwrap_err().to_string().contains("bash"));
        assert!(
            host(&[("LATLAB_VLLM_BIN", "bin/vllm")]).is_err(),
            "relative paths would depend on the working directory"
        );
        assert!(
            host(&[("LATLAB_LAUNCH_ENGINES", "none")]).unwrap().program_for(LaunchedEngine::Vllm).is_err()
        );
    }

    #[test]
    fn engines_get_a_cleared_environment_without_secrets() {
        let h = host(&[
            ("PATH", "/usr/bin"),
            ("HF_HOME", "/srv/hf"),
            ("LATLAB_API_TOKEN", "secret-token-0123456789"),
            ("DATABASE_URL", "postgres://u:pw@db/latlab"),
            ("LATLAB_KEY_OPENAI", "sk-abc"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("LATLAB_BF16_FAT", "0"),
            ("NCCL_DEBUG", "INFO"),
            ("LATLAB_ENGINE_ENV", "NCCL_DEBUG"),
        ])
        .unwrap();
        let names: Vec<&str> = h.engine_env.iter().map(|(k, _)| k.as_str()).collect();
        for want in ["PATH", "HF_HOME", "NCCL_DEBUG"] {
            assert!(names.contains(&want), "{want} missing: {names:?}");
        }
        for never in [
            "LATLAB_API_TOKEN",
            "DATABASE_URL",
            "LATLAB_KEY_OPENAI",
            "AWS_SECRET_ACCESS_KEY",
            "LATLAB_BF16_FAT",
        ] {
            assert!(!names.contains(&never), "{never} passed: {names:?}");
        }
        let native: Vec<&str> = h.native_env.iter().map(|(k, _)| k.as_str()).collect();
        assert!(
            native.contains(&"LATLAB_BF16_FAT")
                && !native.contains(&"LATLAB_API_TOKEN")
                && !native.contains(&"LATLAB_KEY_OPENAI"),
            "{native:?}"
        );
        for bad in ["LATLAB_API_TOKEN", "DATABASE_URL", "LATLAB_KEY_X", "PGPASSWORD", "LATLAB_SEED"] {
            assert!(host(&[("LATLAB_ENGINE_ENV", bad)]).is_err(), "{bad} allowed");
        }
        assert_eq!(h.api_key("LATLAB_KEY_OPENAI").unwrap().expose(), "sk-abc");
        let missing = h.api_key("LATLAB_KEY_NONE").unwrap_err();
        assert!(missing.contains("LATLAB_KEY_NONE") && !missing.contains("OPENAI"), "{missing}");
        assert_eq!(h.secrets.len(), 3, "token, database URL and the key");
        assert!(!format!("{h:?}").contains("sk-abc"), "secrets must not print");
    }

    #[test]
    fn as_root_engines_run_as_nobody_unless_the_operator_says_otherwise() {
        if !running_as_root() {
            return;
        }
        assert_eq!(host(&[]).unwrap().engine_user.map(|u| u.name), Some("nobody".to_string()));
        assert_eq!(host(&[("LATLAB_ENGINE_USER", "root")]).unwrap().engine_user, None);
        assert!(host(&[("LATLAB_ENGINE_USER", "no-such-user")]).is_err());
    }
}
