//! System users latlab hands work to when it runs as root: Postgres refuses to run as root,
//! and engines must not (a launched engine runs third-party code on GPU hosts).

use anyhow::{Context, bail};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// True when this process runs with uid 0.
pub fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

/// A user to run child processes as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnixUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// The user named `name`, from /etc/passwd.
pub fn lookup_user(name: &str) -> anyhow::Result<UnixUser> {
    let passwd = std::fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() > 3 && f[0] == name)
        .and_then(|f| {
            Some(UnixUser { name: name.to_string(), uid: f[2].parse().ok()?, gid: f[3].parse().ok()? })
        })
        .with_context(|| format!("no user {name:?} in /etc/passwd"))
}

/// The first ancestor of `path` that `uid` (in group `gid`) cannot enter, if any: a child
/// process running as that user would fail on it with a bare "permission denied".
pub fn unreachable_ancestor(path: &Path, uid: u32, gid: u32) -> Option<(std::path::PathBuf, u32)> {
    for anc in path.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty()) {
        let Ok(m) = std::fs::metadata(anc) else { continue };
        if !may(&m, uid, gid, 0o1) {
            return Some((anc.to_path_buf(), m.permissions().mode() & 0o777));
        }
    }
    None
}

/// Whether `uid`/`gid` holds the permission bit `bit` (4 read, 2 write, 1 execute) on `m`.
pub fn may(m: &std::fs::Metadata, uid: u32, gid: u32, bit: u32) -> bool {
    let mode = m.permissions().mode();
    if uid == 0 {
        return bit != 1 || mode & 0o111 != 0 || m.is_dir();
    }
    let shift = if m.uid() == uid {
        6
    } else if m.gid() == gid {
        3
    } else {
        0
    };
    mode & (bit << shift) != 0
}

/// Fails with a message naming the folder when `uid` cannot enter every ancestor of `dir`.
pub fn check_reachable(dir: &Path, user: &UnixUser, what: &str) -> anyhow::Result<()> {
    if let Some((anc, mode)) = unreachable_ancestor(dir, user.uid, user.gid) {
        bail!("the {} user cannot enter {} (mode {mode:o}); {what}", user.name, anc.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_nobody_are_found_and_strangers_are_not() {
        assert_eq!(lookup_user("root").unwrap().uid, 0);
        assert!(lookup_user("no-such-user-here").unwrap_err().to_string().contains("no-such-user-here"));
    }

    #[test]
    fn a_private_folder_is_named_as_unreachable() {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let inside = private.join("bin");
        // A uid that owns nothing here and shares no group with it.
        let (uid, gid) = (64_000, 64_000);
        let ancestors_ok = unreachable_ancestor(dir.path(), uid, gid).is_none();
        if ancestors_ok {
            assert_eq!(unreachable_ancestor(&inside, uid, gid), Some((private.clone(), 0o700)));
        }
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o711)).unwrap();
        if ancestors_ok {
            assert_eq!(unreachable_ancestor(&inside, uid, gid), None);
        }
    }
}
