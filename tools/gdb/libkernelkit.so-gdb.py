# SPDX-License-Identifier: MIT
"""gdb helper for programs that use kernelkit (libkernelkit.so).

Installed as $(DATADIR)/gdb/auto-load$(LIBDIR)/libkernelkit.so.1.1.0-gdb.py
(gdb's auto-load convention: the library's real path, links resolved, plus
"-gdb.py"; the build copies it next to the library the same way), so gdb
loads it by itself once that directory is on the auto-load safe path (it is,
for the default prefix's share/gdb/auto-load).  It can also be loaded by hand:
    (gdb) source /path/to/libkernelkit.so-gdb.py

What it does (docs/debugging.md; tested by test/scripts/gdb_default.sh):
 * Under a tracer the library patches static keys with stop_machine: it sends
   its park signal to every other thread, which waits in the handler while the
   code is written.  Just before, it calls kk_gdb_stop_signal(sig).  An
   internal breakpoint there (which never stops) issues
   `handle SIG<n> nostop noprint pass` once, so that those signals no longer
   stop the program: `run` then behaves as without gdb.
 * When the program stops anyway on SIGTRAP or on the park signal, it says in
   a line or two what the stop is and what to type.
 * `kk-status`: the sites gdb can see, sites that hold an int3 now, and the
   park signal.
It only reads memory and registers: it never calls functions in the program.
"""

import re
import signal as _signal

import gdb

_STATE = "_kernelkit_gdb_helper"


def _sig_name(sig):
    """gdb's name for host signal number @sig (SIG34.. for real-time ones)."""
    rtmin = getattr(_signal, "SIGRTMIN", 34)
    rtmax = getattr(_signal, "SIGRTMAX", 64)
    if rtmin <= sig <= rtmax:
        return "SIG%d" % sig
    try:
        return _signal.Signals(sig).name
    except ValueError:
        return "SIG%d" % sig


def _arg0():
    """The first integer argument of the selected frame's function."""
    arch = gdb.selected_frame().architecture().name()
    reg = "$x0" if "aarch64" in arch else "$rdi"
    return int(gdb.parse_and_eval(reg)) & 0xFFFFFFFF


class _Helper(object):
    def __init__(self):
        self.handled = set()   # signal names we made nostop noprint pass
        self.bp = None

    # ---- the park signal ------------------------------------------------

    def silence(self, sig):
        name = _sig_name(sig)
        if name in self.handled:
            return
        self.handled.add(name)
        try:
            gdb.execute("handle %s nostop noprint pass" % name, to_string=True)
        except gdb.error as e:
            gdb.write("kernelkit: cannot `handle %s nostop noprint pass`: %s\n" % (name, e))

    def park_signal(self):
        """The library's park signal: learned, or read from its data."""
        for expr in ("(int)park_sig",):
            try:
                v = int(gdb.parse_and_eval(expr))
                if v > 0:
                    return _sig_name(v)
            except gdb.error:
                pass
        if len(self.handled) == 1:
            return next(iter(self.handled))
        return None

    # ---- sites ------------------------------------------------------------

    def tables(self):
        """(start, end) of every kk_jump_table section loaded now."""
        try:
            out = gdb.execute("maint info sections -all-objects kk_jump_table",
                              to_string=True)
        except gdb.error:
            return []
        return [(int(a, 16), int(b, 16)) for a, b in
                re.findall(r"(0x[0-9a-f]+)->(0x[0-9a-f]+) at 0x[0-9a-f]+: kk_jump_table", out)]

    def sites(self):
        """Yield (site address, key field) for every site in memory: the key
        field's value is the key's address (bit 1 set) or, in tables built
        with older headers, an offset from the field to a slot holding it."""
        inf = gdb.selected_inferior()
        for start, end in self.tables():
            try:
                mem = bytes(inf.read_memory(start, end - start))
            except gdb.MemoryError:
                continue
            for off in range(0, len(mem) - 15, 16):
                code = int.from_bytes(mem[off:off + 4], "little", signed=True)
                key = int.from_bytes(mem[off + 8:off + 16], "little", signed=True)
                yield (start + off + code) & (2**64 - 1), (start + off + 8, key)

    def key_name(self, field):
        inf = gdb.selected_inferior()
        addr, val = field
        slot = (addr + val) & ~1 & (2**64 - 1)
        try:
            if val & 2:
                key = val & ~3 & (2**64 - 1)
            else:
                key = int.from_bytes(bytes(inf.read_memory(slot, 8)), "little")
            name = int.from_bytes(bytes(inf.read_memory(key + 8, 8)), "little")
            if not name:
                return "key %#x" % key
            s = bytes(inf.read_memory(name, 64)).split(b"\0")[0]
            return "key %s" % s.decode("ascii", "replace")
        except (gdb.MemoryError, gdb.error):
            return "key of the entry at %#x" % (addr - 8)

    def site_at(self, addrs):
        for code, slot in self.sites():
            if code in addrs:
                return code, slot
        return None, None

    # ---- stops ------------------------------------------------------------

    def explain_trap(self):
        inf = gdb.selected_inferior()
        pc = int(gdb.selected_frame().pc())
        code, slot = self.site_at((pc - 1, pc))
        try:
            byte = bytes(inf.read_memory(code if code is not None else pc - 1, 1))[0]
        except gdb.MemoryError:
            byte = None
        if code is None:
            if byte == 0xCC:
                gdb.write("kernelkit: the int3 at %#x is not a static-key site: the program's "
                          "own trap (or another tool's); kernelkit does not handle it.\n" % (pc - 1))
            return
        what = "the int3 kernelkit put there while patching it" if byte == 0xCC else \
            "a patch that has finished since"
        gdb.write("kernelkit: SIGTRAP at static-key site %#x (%s): %s.\n"
                  "kernelkit: type `signal SIGTRAP` so the library's handler emulates the site; "
                  "`continue` drops the signal and resumes inside the instruction.\n"
                  % (code, self.key_name(slot), what))

    def stop_signal(self, ev):
        """The signal that stopped the program, or None.  gdb reports a
        SIGTRAP that is none of its breakpoints as a plain StopEvent."""
        if isinstance(ev, gdb.SignalEvent):
            return ev.stop_signal
        if isinstance(ev, gdb.BreakpointEvent):
            return None
        try:
            if int(gdb.parse_and_eval("$_siginfo.si_signo")) == _signal.SIGTRAP:
                return "SIGTRAP"
        except gdb.error:
            pass
        return None

    def on_stop(self, ev):
        try:
            sig = self.stop_signal(ev)
            if sig == "SIGTRAP":
                self.explain_trap()
            elif sig is not None and sig == self.park_signal():
                gdb.write("kernelkit: %s is kernelkit's park signal (stop_machine or a sync "
                          "round while it patches code): `continue` is safe; "
                          "`handle %s nostop noprint pass` hides it.\n" % (sig, sig))
        except gdb.error as e:
            gdb.write("kernelkit: cannot explain this stop: %s\n" % e)

    # ---- kk-status ----------------------------------------------------------

    def status(self):
        inf = gdb.selected_inferior()
        if not inf.pid:
            gdb.write("kernelkit: no process\n")
            return
        libs = [o.filename for o in gdb.objfiles() if o.filename and "libkernelkit.so" in o.filename]
        gdb.write("kernelkit: library %s\n" % (libs[0] if libs else "(statically linked or not loaded)"))
        n = 0
        traps = []
        for code, slot in self.sites():
            n += 1
            try:
                if bytes(inf.read_memory(code, 1))[0] == 0xCC:
                    traps.append((code, slot))
            except gdb.MemoryError:
                pass
        gdb.write("kernelkit: %d static-key sites, %d holding an int3 now\n" % (n, len(traps)))
        for code, slot in traps[:10]:
            gdb.write("  %#x (%s)\n" % (code, self.key_name(slot)))
        park = self.park_signal()
        gdb.write("kernelkit: park signal %s%s\n" % (park or "unknown (not used yet)",
                  " (nostop noprint pass)" if park in self.handled else ""))


class _StopSignalBreakpoint(gdb.Breakpoint):
    """kk_gdb_stop_signal(sig): pass @sig silently from now on.  Never stops."""

    def stop(self):
        try:
            _helper().silence(_arg0())
        except gdb.error as e:
            gdb.write("kernelkit: kk_gdb_stop_signal: %s\n" % e)
        return False


class _KkStatus(gdb.Command):
    """kk-status: kernelkit's static-key sites, int3s in them now, the park signal."""

    def __init__(self):
        super(_KkStatus, self).__init__("kk-status", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        _helper().status()


def _helper():
    return getattr(gdb, _STATE)


def _install():
    if getattr(gdb, _STATE, None) is not None:
        return      # auto-loaded again (another run, another inferior)
    h = _Helper()
    setattr(gdb, _STATE, h)
    # Pending until the library is loaded (when sourced by hand before `run`).
    h.bp = _StopSignalBreakpoint("kk_gdb_stop_signal", internal=True)
    h.bp.silent = True
    gdb.events.stop.connect(h.on_stop)
    _KkStatus()


_install()
