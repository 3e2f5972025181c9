//! The registry with names that clash: two tracepoints with one full name
//! are reported and refused, never merged; a tracepoint named like a
//! built-in lives in its own system and is switched on its own; a bare
//! name several systems have is ambiguous; a `system = ...` header names
//! the system.
//!
//! No test harness (see Cargo.toml): each check runs in turn on the main
//! thread, so that patched keys (the `static-keys` feature) may be flipped.

use ringtrace_tracepoint::{preemptirq, registry, tracepoint, TracepointError};

mod first {
    ringtrace_tracepoint::tracepoint! {
        /// Declared here and again in `second`.
        pub fn twin(x: u32) = "x={}";
    }
}

mod second {
    ringtrace_tracepoint::tracepoint! {
        /// Declared here and already in `first`.
        pub fn twin(x: u32) = "x={}";
    }
}

tracepoint! {
    /// Named like the built-in `preemptirq:irq_disable`, in this crate's
    /// system.
    pub fn irq_disable(reason: u32) = "reason={}";
}

tracepoint! {
    system = app;
    /// A request was served.
    pub fn request_done(status: u16) = "status={}";
    /// A request failed.
    pub fn request_failed(status: u16) = "status={}";
}

fn twins_are_both_listed_and_check_reports_them_with_both_locations() {
    let twins: Vec<_> = registry::all()
        .into_iter()
        .filter(|tp| tp.event == "twin")
        .collect();
    assert_eq!(twins.len(), 2, "both are listed, not merged");
    let (a, b) = (&first::twin::TRACEPOINT, &second::twin::TRACEPOINT);
    assert_eq!(a.name, "registry:twin");
    assert_eq!(a.declared_at.line + 7, b.declared_at.line, "the two blocks");
    let expected = TracepointError::Duplicate {
        name: "registry:twin",
        first: a.declared_at,
        second: b.declared_at,
    };
    assert_eq!(registry::problems(), vec![expected.clone()]);
    assert_eq!(registry::check(), Err(expected.clone()));
    let text = expected.to_string();
    for at in [a.declared_at, b.declared_at] {
        assert!(text.contains(&format!("{}:{}", at.file, at.line)), "{text}");
    }
}

fn enabling_a_duplicated_name_is_refused_however_it_is_named() {
    for pattern in ["twin", "registry:twin", "registry:*", "*:twin", "tw*"] {
        let err = registry::enable(pattern).unwrap_err();
        assert!(
            matches!(
                err,
                TracepointError::Duplicate {
                    name: "registry:twin",
                    ..
                }
            ),
            "{pattern}: {err:?}"
        );
        assert!(matches!(
            registry::disable(pattern),
            Err(TracepointError::Duplicate { .. })
        ));
    }
    assert!(matches!(
        first::twin::TRACEPOINT.set_enabled(true),
        Err(TracepointError::Duplicate { .. })
    ));
    assert!(matches!(
        registry::find("registry:twin"),
        Err(TracepointError::Duplicate { .. })
    ));
    assert!(!first::twin::is_enabled() && !second::twin::is_enabled());
}

fn a_user_irq_disable_is_switched_apart_from_the_built_in() {
    let builtin = &preemptirq::irq_disable::TRACEPOINT;
    assert_eq!(builtin.name, "preemptirq:irq_disable");
    assert_eq!(irq_disable::TRACEPOINT.name, "registry:irq_disable");
    assert_ne!(builtin.id, irq_disable::TRACEPOINT.id);

    assert_eq!(registry::enable("registry:irq_disable"), Ok(1));
    assert!(irq_disable::is_enabled() && !builtin.is_enabled());
    assert_eq!(registry::enable("preemptirq:irq_disable"), Ok(1));
    assert_eq!(registry::disable("registry:irq_disable"), Ok(1));
    assert!(!irq_disable::is_enabled() && builtin.is_enabled());
    assert_eq!(registry::disable("*:irq_disable"), Ok(2));
    assert!(!builtin.is_enabled());
    // The built-ins are switched by their statics, whatever else clashes.
    preemptirq::set_tracepoints(true).unwrap();
    assert!(builtin.is_enabled() && !irq_disable::is_enabled());
    preemptirq::set_tracepoints(false).unwrap();
}

fn a_bare_name_two_systems_have_is_ambiguous_and_lists_both() {
    let expected = TracepointError::Ambiguous {
        given: "irq_disable".into(),
        candidates: vec!["preemptirq:irq_disable", "registry:irq_disable"],
    };
    assert_eq!(registry::find("irq_disable"), Err(expected.clone()));
    assert_eq!(registry::enable("irq_disable"), Err(expected.clone()));
    let text = expected.to_string();
    assert!(
        text.contains("preemptirq:irq_disable, registry:irq_disable")
            && text.contains("system:event"),
        "{text}"
    );
    // A bare name only one system has is enough.
    assert_eq!(
        registry::find("irq_enable").map(|tp| tp.name),
        Ok("preemptirq:irq_enable")
    );
}

fn a_system_header_names_the_system() {
    let tp = &request_done::TRACEPOINT;
    assert_eq!(
        (tp.system, tp.event, tp.name),
        ("app", "request_done", "app:request_done")
    );
    assert_eq!(tp.id, ringtrace_tracepoint::fnv1a("app:request_done"));
    assert_eq!(registry::find("request_done"), Ok(tp));
    assert_eq!(registry::enable("app:*"), Ok(2));
    assert!(request_done::is_enabled() && request_failed::is_enabled());
    assert_eq!(registry::disable("request_*"), Ok(2));
    assert!(!request_done::is_enabled());
}

fn an_unknown_name_lists_the_valid_full_names() {
    for given in ["app:request_lost", "nothing_*", "app"] {
        let err = registry::enable(given).unwrap_err();
        let TracepointError::Unknown { given: g, valid } = &err else {
            panic!("{given}: {err:?}");
        };
        assert_eq!(g, given);
        assert!(
            valid.contains("app:request_done") && valid.contains("preemptirq:irq_disable"),
            "{valid}"
        );
    }
}

fn main() {
    let checks: [(&str, fn()); 6] = [
        (
            "twins_are_both_listed_and_check_reports_them_with_both_locations",
            twins_are_both_listed_and_check_reports_them_with_both_locations,
        ),
        (
            "enabling_a_duplicated_name_is_refused_however_it_is_named",
            enabling_a_duplicated_name_is_refused_however_it_is_named,
        ),
        (
            "a_user_irq_disable_is_switched_apart_from_the_built_in",
            a_user_irq_disable_is_switched_apart_from_the_built_in,
        ),
        (
            "a_bare_name_two_systems_have_is_ambiguous_and_lists_both",
            a_bare_name_two_systems_have_is_ambiguous_and_lists_both,
        ),
        (
            "a_system_header_names_the_system",
            a_system_header_names_the_system,
        ),
        (
            "an_unknown_name_lists_the_valid_full_names",
            an_unknown_name_lists_the_valid_full_names,
        ),
    ];
    for (name, check) in checks {
        check();
        println!("test {name} ... ok");
    }
    println!("test result: ok. {} passed", checks.len());
}
