//! One name for the condition under which the rseq write path is built:
//! Linux on x86_64, natively (not under loom's model, whose atomics the
//! path's sections cannot use, and not under Miri, which runs no inline
//! assembly and no rseq). The code says `cfg(ringtrace_rseq)`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ringtrace_rseq)");
    println!("cargo::rerun-if-changed=build.rs");
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
