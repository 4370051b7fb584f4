//! Loading a policy profile from a policy root.

use planlock_contract::Failure;
use planlock_contract::profile::PolicyProfile;
use serde_json::json;

#[test]
fn profiles_load_from_the_policy_root_and_stay_inside_it() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("profiles/default");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("modes.yaml"), "chat: {}\n").unwrap();
    std::fs::write(dir.join("triggers.yaml"), "[]\n").unwrap();
    let err = PolicyProfile::load(root.path(), "profiles/default").unwrap_err();
    assert_eq!(err.code(), "profile-unreadable");
    assert!(err.to_string().contains("bundles.yaml"), "{err}");
    std::fs::write(dir.join("bundles.yaml"), "default: {strategy_provider_id: sql}\n").unwrap();
    let p = PolicyProfile::load(root.path(), "profiles/default").unwrap();
    assert_eq!(p.bundles, json!({"default": {"strategy_provider_id": "sql"}}));
    for bad in ["../profiles/default", "/etc", "profiles/../../x"] {
        assert_eq!(PolicyProfile::load(root.path(), bad).unwrap_err().code(), "profile-path", "{bad}");
    }
    std::fs::write(dir.join("modes.yaml"), "a: *nope\n").unwrap();
    let err = PolicyProfile::load(root.path(), "profiles/default").unwrap_err();
    assert_eq!(err.code(), "yaml");
    assert!(err.to_string().contains("modes.yaml:1:"), "{err}");
}
