#!/usr/bin/env python3
"""Makes the win_amd64 wheel of rock-ci from the manylinux one and the Windows executables.

    scripts/windows/wheel.py LINUX_WHEEL EXE_DIR OUT_DIR

The two wheels hold the same project: the Windows one takes the Linux wheel's METADATA and
license files as they are, tags itself `py3-none-win_amd64`, and ships in its scripts
`rock-ci.exe`, `elf-patch.exe` and, for every `sh` launcher of the Linux wheel, a copy of
`rock-ci-launcher.exe` named after that tool (`fetch_artifacts.exe`, ...), which runs
`rock-ci.exe TOOL` beside it. The Linux wheel's SBOM describes the Linux build and is left out.
Prints the wheel's path.
"""
import base64
import hashlib
import sys
import zipfile
from pathlib import Path


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main() -> None:
    linux_wheel, exe_dir, out_dir = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    source = zipfile.ZipFile(linux_wheel)
    names = source.namelist()
    [dist_info] = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")}
    [data_dir] = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".data")}
    project_version = dist_info[: -len(".dist-info")]
    executables = {name: (exe_dir / name).read_bytes() for name in ("rock-ci.exe", "elf-patch.exe")}
    launcher = (exe_dir / "rock-ci-launcher.exe").read_bytes()
    entries: list[tuple[str, bytes]] = []
    for name in names:
        if not name.startswith(f"{data_dir}/scripts/"):
            continue
        script = name.rsplit("/", 1)[1]
        if script in ("rock-ci", "elf-patch"):
            continue
        # Every other script is a tool's sh launcher.
        entries.append((f"{data_dir}/scripts/{script}.exe", launcher))
    if len(entries) < 13:
        sys.exit(f"{linux_wheel}: only {len(entries)} tool launchers")
    for name, data in executables.items():
        entries.append((f"{data_dir}/scripts/{name}", data))
    for name in names:
        if name == f"{dist_info}/METADATA" or name.startswith(f"{dist_info}/licenses/"):
            entries.append((name, source.read(name)))
    generator = next(l for l in source.read(f"{dist_info}/WHEEL").decode().splitlines()
                     if l.startswith("Generator:"))
    wheel_file = f"Wheel-Version: 1.0\n{generator}\nRoot-Is-Purelib: false\nTag: py3-none-win_amd64\n"
    entries.append((f"{dist_info}/WHEEL", wheel_file.encode()))
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{project_version}-py3-none-win_amd64.whl"
    tmp = out.with_name(f".{out.name}.partial")
    record = [record_line(n, d) for n, d in entries] + [f"{dist_info}/RECORD,,"]
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o755 << 16 if name.endswith(".exe") else 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
        wheel.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)),
                       "\n".join(record) + "\n")
    tmp.replace(out)
    print(out)


if __name__ == "__main__":
    main()
