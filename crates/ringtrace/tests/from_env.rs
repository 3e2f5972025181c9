//! `TracerBuilder::from_env`: a session variable whose value cannot make a
//! ring fails `build`, naming the variable, its value and what it may
//! hold. Each case runs in a child process, whose environment is its own.

use ringtrace::{Tracer, SESSION_BUFFER_ENV, SESSION_CLOCK_ENV, SESSION_ENV};
use ringtrace_testkit::{self_command, TempDir};

const ROLE: &str = "RINGTRACE_FROM_ENV_TEST_ROLE";

/// The child: builds from the environment and says what came of it.
#[test]
fn child_builds_from_env() {
    if std::env::var(ROLE).is_err() {
        return;
    }
    match Tracer::builder().from_env().build() {
        Ok(t) => println!("BUILT {:?}", t.ring().geometry().pages_per_cpu),
        Err(e) => println!("REFUSED {e}"),
    }
}

fn build_with(vars: &[(&str, &str)]) -> String {
    let mut c = self_command();
    c.args([
        "--exact",
        "child_builds_from_env",
        "--nocapture",
        "--test-threads=1",
    ]);
    c.env(ROLE, "1");
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    ["BUILT", "REFUSED"]
        .iter()
        .find_map(|v| {
            text.find(v)
                .map(|at| text[at..].lines().next().unwrap_or("").to_owned())
        })
        .unwrap_or_else(|| panic!("no verdict: {text}"))
}

#[test]
fn a_bad_session_variable_is_named_in_the_error() {
    let tmp = TempDir::new("from-env");
    let session = tmp.path().join("s");
    std::fs::create_dir_all(session.join("rings")).unwrap();
    let session = session.to_str().unwrap();
    let missing = tmp.path().join("no-session");
    let missing = missing.to_str().unwrap();

    let said = build_with(&[(SESSION_ENV, missing)]);
    assert!(
        said.starts_with("REFUSED") && said.contains(SESSION_ENV),
        "{said}"
    );
    assert!(said.contains("ringtrace record"), "{said}");

    for size in ["0", "1G", "1K"] {
        let said = build_with(&[(SESSION_ENV, session), (SESSION_BUFFER_ENV, size)]);
        assert!(said.contains(SESSION_BUFFER_ENV), "{size}: {said}");
        // The value as it was given.
        assert!(
            said.contains(&format!("{SESSION_BUFFER_ENV}=\"{size}\"")),
            "{size}: {said}"
        );
    }
    // A clock name that parses, for a clock this machine lacks.
    let lacking = if cfg!(target_arch = "x86_64") {
        "cntvct"
    } else {
        "tsc"
    };
    let said = build_with(&[(SESSION_ENV, session), (SESSION_CLOCK_ENV, lacking)]);
    assert!(
        said.starts_with("REFUSED") && said.contains(SESSION_CLOCK_ENV) && said.contains(lacking),
        "{said}"
    );
    let said = build_with(&[(SESSION_ENV, session), (SESSION_CLOCK_ENV, "nope")]);
    assert!(
        said.contains(SESSION_CLOCK_ENV) && said.contains("nope"),
        "{said}"
    );
    assert!(said.contains("mono"), "the valid names: {said}");

    let said = build_with(&[(SESSION_ENV, session), (SESSION_BUFFER_ENV, "64K")]);
    assert!(said.starts_with("BUILT"), "{said}");
}
