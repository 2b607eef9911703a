"""Post's stack where it dies: the replay binary run under gdb on the finding's input.

gdb stops at the first fatal signal, before the harness's own handler reports it, and prints
the faulting instruction and the backtrace. The frames kept are post's (those in
``libpost.so``), innermost first; their names come from the library's symbol table, so no
debug build is needed. The result is cached in the finding's folder (``stack.json``): taking
it costs a second, and a build directory may be gone later.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

from ..core import protocol
from ..core.files import write_json

STACK_FILE = "stack.json"
GDB_TIMEOUT_S = 60.0

_SIGNAL = re.compile(r"^Program (?:received|terminated with) signal (?P<signal>SIG\w+)", re.M)
_FRAME = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(?P<func>.+?) \(.*?\)(?: at (?P<at>\S+))?(?: from (?P<lib>\S+))?$",
                    re.M)
_INSTRUCTION = re.compile(r"^=> 0x[0-9a-f]+(?: <[^>]*>)?:\s*(?P<insn>.+)$", re.M)
_VALUE = re.compile(r"^\$(?P<n>[12]) = (?:\(void \*\) )?(?P<value>\S+)", re.M)
# below this an unmapped address is a null pointer plus an offset
NEAR_NULL = 1 << 16
SI_KERNEL = 128          # a general-protection fault: a misaligned vector access or a non-canonical address
SEGV_MAPERR, SEGV_ACCERR = 1, 2


def post_stack(finding: Path, replay_binary: Optional[Path]) -> Optional[Dict]:
    """``{"signal", "instruction", "frames"}`` of post's crash on the finding's input (cached);
    None where it cannot be taken (no gdb, no replay binary, no crash under gdb)."""
    cached = finding / STACK_FILE
    if cached.is_file():
        return json.loads(cached.read_text()) or None
    data = finding / "input.bin"
    if replay_binary is None or not Path(replay_binary).is_file() or not data.is_file() or not shutil.which("gdb"):
        return None
    stack = run_gdb(Path(replay_binary), data)
    write_json(cached, stack or {})
    return stack


def run_gdb(binary: Path, data: Path) -> Optional[Dict]:
    command = ["gdb", "-batch", "-nx", "-q", "-ex", "set pagination off", "-ex", "set confirm off",
               "-ex", "run", "-ex", "p $_siginfo.si_code", "-ex", "p $_siginfo._sifields._sigfault.si_addr",
               "-ex", "x/i $pc", "-ex", "bt 32", "--args", str(binary), str(data)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=GDB_TIMEOUT_S,
                              env=protocol.HarnessEnv().environ(), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    return parse_gdb(proc.stdout + proc.stderr)


def parse_gdb(text: str) -> Optional[Dict]:
    """The signal, the faulting instruction's mnemonic and post's frames from gdb's output."""
    signal = _SIGNAL.search(text)
    if not signal:
        return None
    insn = _INSTRUCTION.search(text)
    mnemonic = insn.group("insn").split()[0] if insn else ""
    frames: List[str] = []
    for match in _FRAME.finditer(text[signal.end():]):
        lib = match.group("lib") or ""
        if "libpost" in lib or "hg_post" in (match.group("at") or ""):
            frames.append(match.group("func").strip())
    values = {m.group("n"): m.group("value") for m in _VALUE.finditer(text)}
    return {"signal": signal.group("signal"), "fault": fault_kind(signal.group("signal"), values.get("1"), values.get("2")),
            "instruction": insn.group("insn").strip() if insn else "", "mnemonic": mnemonic, "frames": frames}


def fault_kind(signal: str, code: Optional[str], address: Optional[str]) -> str:
    """Why the access faulted, in the terms a developer reads a crash in (from siginfo)."""
    if signal != "SIGSEGV" or code is None:
        return signal
    try:
        code_n, addr = int(code), int(address or "0", 0)
    except ValueError:
        return signal
    if code_n == SI_KERNEL:
        return "general protection (a misaligned vector access or a non-canonical address)"
    if code_n == SEGV_MAPERR:
        return "null pointer (plus an offset)" if addr < NEAR_NULL else "unmapped address"
    if code_n == SEGV_ACCERR:
        return "access to protected memory"
    return f"SIGSEGV code {code_n}"
