//! One name for the condition under which the rseq write path is built:
//! Linux on x86_64, natively (not under loom's model, whose atomics the
//! path's sections cannot use, and not under Miri, which runs no inline
//! assembly and no rseq). The code says `cfg(ringtrace_rseq)`.
//!
//! It also declares `ringtrace_weaken`, with the names src/order.rs gives
//! the orderings that `--cfg ringtrace_weaken="NAME"` weakens (for
//! scripts/loom-weaken.sh).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ringtrace_rseq)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/order.rs");
    let order = std::fs::read_to_string("src/order.rs").unwrap_or_default();
    let names: Vec<String> = order
        .split("ringtrace_weaken = \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|name| format!("\"{name}\""))
        .collect();
    println!(
        "cargo::rustc-check-cfg=cfg(ringtrace_weaken, values({}))",
        names.join(", ")
    );
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native_x86_64_linux =
        var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ARCH") == "x86_64";
    // Cargo sets CARGO_CFG_LOOM for `--cfg loom` in RUSTFLAGS, and
    // CARGO_CFG_MIRI under `cargo miri`.
    let modelled = std::env::var_os("CARGO_CFG_LOOM").is_some()
        || std::env::var_os("CARGO_CFG_MIRI").is_some();
    if native_x86_64_linux && !modelled {
        println!("cargo::rustc-cfg=ringtrace_rseq");
    }
}
