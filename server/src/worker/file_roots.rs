//! The folders a run may read files from: datasets, tokenizers and checkpoints named in a
//! spec are resolved here before anything opens them. A path must lie under one of the
//! roots after every symlink is followed, and be a regular file (or a folder, for
//! checkpoints): `/dev/zero`, FIFOs and `/etc/shadow` never reach a reader.

use anyhow::bail;
use bench_types::{Dataset, RunSpec, Target};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRoots {
    /// `LATLAB_ASSETS_DIR` (default `assets/cache`, made absolute): where relative paths
    /// point, and always a root.
    pub assets: PathBuf,
    /// `LATLAB_FILE_ROOTS`: further folders, `:`-separated absolute paths.
    pub extra: Vec<PathBuf>,
}

/// What a path must name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    /// A `tokenizer.json`, or the folder holding one.
    FileOrDir,
}

impl FileRoots {
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        let set = |k: &str| get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let assets = PathBuf::from(set(bench::assets::ASSETS_ENV).unwrap_or_else(|| "assets/cache".into()));
        let assets = std::path::absolute(&assets).unwrap_or(assets);
        let mut extra = Vec::new();
        for p in set("LATLAB_FILE_ROOTS").unwrap_or_default().split(':').filter(|p| !p.is_empty()) {
            if !p.starts_with('/') {
                bail!("LATLAB_FILE_ROOTS: {p:?} is not an absolute path");
            }
            if p == "/" {
                bail!(
                    "LATLAB_FILE_ROOTS: '/' would let runs read every file on the host; name the folders that hold data and models"
                );
            }
            extra.push(PathBuf::from(p));
        }
        Ok(FileRoots { assets, extra })
    }

    fn roots(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.assets).chain(&self.extra)
    }

    /// For messages: the folders, as configured.
    pub fn describe(&self) -> String {
        self.roots().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
    }

    /// The real path `p` names, when it lies under a root and is of `kind`. Errors name
    /// `field` and never say whether something exists outside the roots.
    pub fn resolve(&self, field: &str, p: &str, kind: Kind) -> Result<PathBuf, String> {
        let outside = || {
            format!(
                "{field}: {p} is outside the folders this worker reads from ({}; LATLAB_FILE_ROOTS)",
                self.describe()
            )
        };
        if let Some(problem) = bench_types::validate::path_problem(p) {
            return Err(format!("{field}: {problem}"));
        }
        let joined = if p.starts_with('/') { PathBuf::from(p) } else { self.assets.join(p) };
        if !self.roots().any(|r| joined.starts_with(r)) {
            return Err(outside());
        }
        let real = std::fs::canonicalize(&joined)
            .map_err(|_| format!("{field}: {p} does not exist under {}", self.describe()))?;
        // Symlinks may point anywhere; the real path must stay under a (real) root.
        let inside = self.roots().filter_map(|r| std::fs::canonicalize(r).ok()).any(|r| real.starts_with(&r));
        if !inside {
            return Err(outside());
        }
        let meta = std::fs::metadata(&real).map_err(|e| format!("{field}: {p}: {e}"))?;
        let ok = match kind {
            Kind::File => meta.is_file(),
            Kind::Dir => meta.is_dir(),
            Kind::FileOrDir => meta.is_file() || meta.is_dir(),
        };
        if !ok {
            let want = match kind {
                Kind::File => "a regular file",
                Kind::Dir => "a folder",
                Kind::FileOrDir => "a regular file or a folder",
            };
            return Err(format!("{field}: {p} is not {want}"));
        }
        Ok(real)
    }

    /// `spec` with every file it names replaced by its real path under the roots, ready for
    /// the bench and the engines; an error names the first field that fails.
    pub fn resolve_spec(&self, spec: &RunSpec) -> Result<RunSpec, String> {
        let mut out = spec.clone();
        if let Some(t) = &spec.tokenizer {
            out.tokenizer = Some(path_string(self.resolve("tokenizer", t, Kind::FileOrDir)?));
        }
        match &mut out.dataset {
            Dataset::Sharegpt { path: Some(p), .. } | Dataset::Jsonl { path: p } => {
                *p = path_string(self.resolve("dataset.path", p, Kind::File)?);
            }
            Dataset::Sharegpt { path: None, .. } | Dataset::Random { .. } => {}
        }
        match &mut out.target {
            Target::Native(n) => {
                if !n.model_source.starts_with("random:") {
                    n.model_source =
                        path_string(self.resolve("target.model_source", &n.model_source, Kind::Dir)?);
                }
                // A draft checkpoint follows the model source's rules.
                if let Some(s) = n.speculative.as_mut().filter(|s| !s.draft_model.starts_with("random:")) {
                    s.draft_model = path_string(self.resolve(
                        "target.speculative.draft_model",
                        &s.draft_model,
                        Kind::Dir,
                    )?);
                }
            }
            Target::Launched(l) => {
                if l.model.starts_with('/') {
                    l.model = path_string(self.resolve("target.model", &l.model, Kind::Dir)?);
                }
                if let Some(s) = l.speculative.as_mut().filter(|s| s.draft_model.starts_with('/')) {
                    s.draft_model = path_string(self.resolve(
                        "target.speculative.draft_model",
                        &s.draft_model,
                        Kind::Dir,
                    )?);
                }
            }
            _ => {}
        }
        Ok(out)
    }
}

fn path_string(p: PathBuf) -> String {
    p.to_string_lossy().into_owned()
}

/// The real assets folder, for engines that look files up there themselves.
pub fn real_or_given(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn roots(dir: &Path) -> FileRoots {
        FileRoots { assets: dir.join("assets"), extra: vec![dir.join("models")] }
    }

    #[test]
    fn only_regular_files_under_the_roots_resolve() {
        let d = tempfile::tempdir().unwrap();
        let r = roots(d.path());
        std::fs::create_dir_all(d.path().join("assets/sets")).unwrap();
        std::fs::create_dir_all(d.path().join("models/qwen")).unwrap();
        std::fs::write(d.path().join("assets/sets/a.jsonl"), "{}\n").unwrap();
        std::fs::write(d.path().join("secret"), "x").unwrap();
        symlink(d.path().join("secret"), d.path().join("assets/escape.jsonl")).unwrap();
        symlink("/dev/zero", d.path().join("assets/zero.jsonl")).unwrap();
        let fifo = d.path().join("assets/fifo.jsonl");
        assert_eq!(
            unsafe { libc::mkfifo(std::ffi::CString::new(fifo.to_str().unwrap()).unwrap().as_ptr(), 0o600) },
            0
        );

        assert!(
            r.resolve("dataset.path", "sets/a.jsonl", Kind::File).unwrap().ends_with("assets/sets/a.jsonl")
        );
        let abs = d.path().join("assets/sets/a.jsonl");
        assert!(r.resolve("dataset.path", abs.to_str().unwrap(), Kind::File).is_ok());
        assert!(
            r.resolve("target.model_source", d.path().join("models/qwen").to_str().unwrap(), Kind::Dir)
                .is_ok()
        );

        let err = |p: &str, k| r.resolve("dataset.path", p, k).unwrap_err();
        assert!(err("/etc/passwd", Kind::File).contains("outside the folders"));
        assert!(
            err("/etc/no-such-file", Kind::File).contains("outside the folders"),
            "must not reveal what exists outside"
        );
        assert!(err("escape.jsonl", Kind::File).contains("outside the folders"), "a symlink out is outside");
        assert!(err("zero.jsonl", Kind::File).contains("outside the folders"));
        assert!(err("fifo.jsonl", Kind::File).contains("not a regular file"));
        assert!(err("sets", Kind::File).contains("not a regular file"));
        assert!(err("missing.jsonl", Kind::File).contains("does not exist"));
        assert!(err("../secret", Kind::File).contains("'..'"));
        assert!(err("sets/a.jsonl", Kind::Dir).contains("not a folder"));
    }

    #[test]
    fn a_spec_gets_real_paths_and_ids_stay_ids() {
        let d = tempfile::tempdir().unwrap();
        let r = roots(d.path());
        std::fs::create_dir_all(d.path().join("assets")).unwrap();
        std::fs::create_dir_all(d.path().join("models/draft")).unwrap();
        std::fs::write(d.path().join("assets/p.jsonl"), "{}\n").unwrap();
        let draft = d.path().join("models/draft");
        let spec: RunSpec = serde_json::from_value(serde_json::json!({
            "target": {"kind": "launched", "engine": "sglang", "model": "Qwen/Qwen3-8B",
                       "speculative": {"algorithm": "eagle3", "draft_model": draft.to_str().unwrap()}},
            "model": "m", "dataset": {"kind": "jsonl", "path": "p.jsonl"}, "num_prompts": 1, "load": {"max_concurrency": [1]}
        }))
        .unwrap();
        let out = r.resolve_spec(&spec).unwrap();
        let Dataset::Jsonl { path } = &out.dataset else { panic!() };
        assert!(path.starts_with('/') && path.ends_with("assets/p.jsonl"), "{path}");
        let Target::Launched(l) = &out.target else { panic!() };
        assert_eq!(l.model, "Qwen/Qwen3-8B");
        assert_eq!(
            PathBuf::from(&l.speculative.as_ref().unwrap().draft_model),
            std::fs::canonicalize(&draft).unwrap()
        );
        let mut bad = spec.clone();
        bad.tokenizer = Some("/etc".into());
        assert!(r.resolve_spec(&bad).unwrap_err().starts_with("tokenizer: /etc is outside"));
    }

    #[test]
    fn a_native_draft_checkpoint_resolves_like_its_model_and_random_drafts_stay() {
        let d = tempfile::tempdir().unwrap();
        let r = roots(d.path());
        std::fs::create_dir_all(d.path().join("models/eagle3")).unwrap();
        let native = |draft: &str| -> RunSpec {
            serde_json::from_value(serde_json::json!({
                "target": {"kind": "native", "model_source": "random:tiny",
                           "speculative": {"algorithm": "eagle3", "draft_model": draft}},
                "model": "m", "dataset": {"kind": "random", "input_len": 4, "output_len": 4}, "num_prompts": 1, "load": {}
            }))
            .unwrap()
        };
        let draft_of = |s: &RunSpec| match &s.target {
            Target::Native(n) => n.speculative.as_ref().unwrap().draft_model.clone(),
            _ => unreachable!(),
        };
        let draft = d.path().join("models/eagle3");
        let out = r.resolve_spec(&native(draft.to_str().unwrap())).unwrap();
        assert_eq!(PathBuf::from(draft_of(&out)), std::fs::canonicalize(&draft).unwrap());
        assert_eq!(draft_of(&r.resolve_spec(&native("random:tiny-eagle3")).unwrap()), "random:tiny-eagle3");
        let err = r.resolve_spec(&native("/etc")).unwrap_err();
        assert!(err.starts_with("target.speculative.draft_model: /etc is outside"), "{err}");
    }
}
