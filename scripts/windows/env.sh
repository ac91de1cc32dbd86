# Sourced by the scripts that build or run Windows programs (scripts/test-windows,
# scripts/build-wheel --windows, scripts/test-wheel --windows): installs what they need when it
# is missing and sets the environment of a Windows build and of Wine. Debian's own Rust
# (rustc-web, with the standard library's source) builds the Windows std, as the rustup
# toolchain has none for that target; MinGW-w64 links; Wine runs the programs. Wine 8.0 lacks
# bcryptprimitives.dll, whose ProcessPrng every Rust program imports: a small DLL built here
# (scripts/windows/processprng.c) stands in for it in a Wine prefix of our own.
# Everything goes below target/windows (its own target dir: another compiler, another std).
windows_out="$PWD/target/windows"
mkdir -p "$windows_out"

windows_packages=(rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 wine64 lld-19)
windows_missing=()
for p in "${windows_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || windows_missing+=("$p")
done
# The workspace needs rustc 1.95 or newer: Debian's security updates carry it (1.96), its point
# release does not (1.85), and a machine's package lists may predate it, so they are refreshed
# before installing and an older rustc-web is upgraded.
windows_rustc_ok() {
    local v
    v=$(/usr/bin/rustc --version 2>/dev/null | awk '{ print $2 }') || return 1
    [ -n "$v" ] && printf '%s\n1.95.0\n' "$v" | sort -V -C -r
}
if [ "${#windows_missing[@]}" -gt 0 ] || ! windows_rustc_ok; then
    echo "installing ${windows_packages[*]} (rustc 1.95 or newer)"
    {
        apt-get update &&
            # Recommends would pull in a whole LLVM and the Mesa drivers, none of them used here.
            apt-get install -y --no-install-recommends "${windows_packages[@]}"
    } >"$windows_out/apt.log" 2>&1 || { cat "$windows_out/apt.log"; exit 1; }
    windows_rustc_ok || {
        echo "error: /usr/bin/rustc is $(/usr/bin/rustc --version 2>&1), the workspace needs 1.95 or newer" >&2
        exit 1
    }
fi

wine=/usr/lib/wine/wine64
export WINEDEBUG=-all
# No Mono or Gecko: nothing here needs .NET or HTML, and their installers would be offered.
export WINEDLLOVERRIDES="mscoree,mshtml="
mkdir -p "$windows_out/drive-b"

# Makes the Wine prefix $1 when it is missing: Wine's defaults, the bcryptprimitives.dll built
# here, and TheRock's build drive. TheRock's Windows jobs build on a drive of their own
# (B:\build): the tests that check paths on another drive than the system's use B:, which maps
# to target/windows/drive-b.
windows_prefix() {
    local prefix=$1
    local system32="$prefix/drive_c/windows/system32"
    if [ ! -f "$system32/bcryptprimitives.dll" ]; then
        echo "creating the Wine prefix $prefix"
        WINEPREFIX="$prefix" "$wine" wineboot --init >/dev/null 2>&1
        WINEPREFIX="$prefix" /usr/lib/wine/wineserver -w
        if [ ! -f "$windows_out/bcryptprimitives.dll" ]; then
            x86_64-w64-mingw32-gcc -shared -O2 -Wl,--kill-at -o "$windows_out/bcryptprimitives.dll" \
                scripts/windows/processprng.c -ladvapi32
        fi
        cp "$windows_out/bcryptprimitives.dll" "$system32/bcryptprimitives.dll"
    fi
    ln -sfn "$windows_out/drive-b" "$prefix/dosdevices/b:"
}
export WINEPREFIX="$windows_out/wineprefix"
windows_prefix "$WINEPREFIX"

# Debian's rustc and cargo, called by path: the rustup proxies first on PATH would pick the
# toolchain of rust-toolchain.toml, which has no Windows std.
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
# -Zbuild-std is unstable: allowed on this stable compiler for these builds only.
export RUSTC_BOOTSTRAP=1
# Every Windows program (the wheel's, the test programs, the e2e jobs' rock-ci.exe) is linked
# with lld (scripts/windows/lld-gcc says why not MinGW's ld). One linker for all of them also
# keeps one build: cargo compiles the whole target again when the linker changes, which made
# `scripts/e2e-ci-run --windows` rebuild the 296 crates `scripts/test-windows` had just built.
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER="$PWD/scripts/windows/lld-gcc"
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$wine"

# cargo for the Windows target, in target/windows, at a lower priority than the rest. `test` is
# always among the std crates: cargo adds it to `cargo test` builds only, and a std built with
# another crate set gives every dependency another hash, so `cargo build` of an example after
# the tests would compile them all again.
windows_cargo() {
    local cmd=$1
    shift
    nice -n 10 /usr/bin/cargo "$cmd" -Zbuild-std=std,panic_abort,test --target x86_64-pc-windows-gnu \
        --target-dir "$windows_out" --locked "$@"
}
