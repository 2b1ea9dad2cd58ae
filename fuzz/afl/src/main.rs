//! `mnem-afl TARGET`: one of mnem's fuzz targets under AFL++. A broken invariant panics,
//! which AFL++ records as a crash with the input that caused it. `mnem-afl --list` prints
//! each target's name and corpus, for scripts/fuzz_afl.sh.

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    if name == "--list" {
        for target in mnem_fuzz::targets::TARGETS {
            println!("{} {}", target.name, target.corpus);
        }
        return;
    }
    let Some(target) = mnem_fuzz::targets::target(&name) else {
        let names: Vec<&str> = mnem_fuzz::targets::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: mnem-afl TARGET (one of {})", names.join(", "));
        std::process::exit(2);
    };
    afl::fuzz!(|data: &[u8]| {
        if let Err(broken) = (target.run)(data) {
            panic!("{}: {broken}", target.name);
        }
    });
}
