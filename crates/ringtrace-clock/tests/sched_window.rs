//! The `sched` reads' windows as compiled: this test binary is
//! disassembled (objdump) and the faithful read must load the offset and
//! the scale back to back after the counter read, as 2009's
//! `__cycles_2_ns()` did; the amplified read must have the multiply
//! between its loads. A change that moves the faithful loads apart fails
//! here, whatever the listing in the source says.

#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use ringtrace_clock::{Clock, Sched, SchedWide};
use std::process::Command;

/// One instruction: mnemonic and operands, as objdump prints them.
#[derive(Debug, Clone, PartialEq)]
struct Instruction {
    mnemonic: String,
    operands: String,
}

fn disassemble_self() -> Option<Vec<Instruction>> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-M", "intel"])
        .arg(&exe)
        .output();
    let out = match out {
        Ok(out) if out.status.success() => out,
        _ => {
            assert!(
                std::env::var_os("RINGTRACE_REQUIRE_TOOLS").is_none(),
                "objdump cannot be run, and RINGTRACE_REQUIRE_TOOLS is set"
            );
            eprintln!("objdump cannot be run: the compiled windows are not checked");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter_map(|line| {
                // "  17dcc3:\trdtsc" or "  17dccf:\tmov    rdi,QWORD PTR [rsi]"
                let (_, rest) = line.split_once(":\t")?;
                let mut parts = rest.trim().splitn(2, char::is_whitespace);
                let mnemonic = parts.next()?.to_owned();
                let operands = parts.next().unwrap_or("").trim().to_owned();
                Some(Instruction { mnemonic, operands })
            })
            .collect(),
    )
}

/// The base register of a `QWORD PTR [reg]` or `[reg+0x8]` operand.
fn qword_at(operands: &str, offset: &str) -> Option<String> {
    let inner = operands.split("QWORD PTR [").nth(1)?.split(']').next()?;
    match inner.split_once('+') {
        Some((reg, off)) if off == offset => Some(reg.to_owned()),
        None if offset.is_empty() => Some(inner.to_owned()),
        _ => None,
    }
}

/// The faithful shape: after `rdtsc`, within a few instructions, a load of
/// `[r]` immediately followed by `mul QWORD PTR [r+0x8]`.
fn faithful_windows(code: &[Instruction]) -> usize {
    code.windows(7)
        .filter(|w| w[0].mnemonic == "rdtsc")
        .filter(|w| {
            w.windows(2).any(|pair| {
                let offset = qword_at(&pair[0].operands, "");
                pair[0].mnemonic == "mov"
                    && offset.is_some()
                    && pair[1].mnemonic == "mul"
                    && qword_at(&pair[1].operands, "0x8") == offset
            })
        })
        .count()
}

/// The amplified shape: `mul QWORD PTR [r+0x8]`, `shrd`, then
/// `add rax,QWORD PTR [r]`.
fn wide_windows(code: &[Instruction]) -> usize {
    code.windows(8)
        .filter(|w| w[0].mnemonic == "rdtsc")
        .filter(|w| {
            w.windows(3).any(|t| {
                let scale = qword_at(&t[0].operands, "0x8");
                t[0].mnemonic == "mul"
                    && scale.is_some()
                    && t[1].mnemonic == "shrd"
                    && t[2].mnemonic == "add"
                    && qword_at(&t[2].operands, "") == scale
            })
        })
        .count()
}

#[test]
#[cfg_attr(miri, ignore = "runs objdump")]
fn the_compiled_faithful_read_loads_offset_and_scale_back_to_back() {
    // Compile both reads into this binary.
    if let (Ok(a), Ok(b)) = (Sched::new(), SchedWide::new()) {
        std::hint::black_box((a.read(), b.read()));
    }
    let Some(code) = disassemble_self() else {
        return;
    };
    assert!(
        faithful_windows(&code) > 0,
        "no faithful sched read (a load of the offset, then `mul` by the scale at +8, right after rdtsc) in the binary"
    );
    assert!(
        wide_windows(&code) > 0,
        "no amplified sched read (the multiply between the loads) in the binary"
    );
}

#[test]
fn the_window_matchers_tell_adjacent_loads_from_loads_apart() {
    let ins = |m: &str, o: &str| Instruction {
        mnemonic: m.into(),
        operands: o.into(),
    };
    let faithful = vec![
        ins("rdtsc", ""),
        ins("shl", "rdx,0x20"),
        ins("or", "rax,rdx"),
        ins("mov", "rcx,rax"),
        ins("mov", "rdi,QWORD PTR [rsi]"),
        ins("mul", "QWORD PTR [rsi+0x8]"),
        ins("shrd", "rax,rdx,0x20"),
        ins("add", "rax,rdi"),
    ];
    assert_eq!(faithful_windows(&faithful), 1);
    assert_eq!(wide_windows(&faithful), 0);
    // One instruction moved between the loads: no longer faithful.
    let mut apart = faithful.clone();
    apart.insert(5, ins("imul", "rax,rax,0x1"));
    assert_eq!(faithful_windows(&apart), 0);
    let wide = vec![
        ins("rdtsc", ""),
        ins("shl", "rdx,0x20"),
        ins("or", "rax,rdx"),
        ins("mov", "rcx,rax"),
        ins("mul", "QWORD PTR [rsi+0x8]"),
        ins("shrd", "rax,rdx,0x20"),
        ins("add", "rax,QWORD PTR [rsi]"),
        ins("jmp", "17dc23"),
    ];
    assert_eq!(wide_windows(&wide), 1);
    assert_eq!(faithful_windows(&wide), 0);
}
