"""The files tools that patch, unpack and download write, for guard/shwrites.py: `patch`, `tar`,
`unzip`, `curl`, `wget`, `find` running a command that is not a known reader or deleting, and the
build tools told to work in another directory (`make -C`, `npm --prefix`, `yarn --cwd`, `pnpm -C`),
whose recipes and scripts write there. A directory they write into is judged as a write there (`.`
when they write where they run). Standard library only."""

from __future__ import annotations

# Commands `find -exec` may run on what it finds without writing it.
_READERS = {
    "grep", "egrep", "fgrep", "rg", "cat", "head", "tail", "wc", "ls", "file", "stat", "echo", "printf", "du", "md5sum",
    "sha1sum", "sha256sum", "sha512sum", "basename", "dirname", "readlink", "realpath", "test", "[", "diff", "cmp", "less",
    "more", "nl", "od", "xxd", "hexdump", "strings", "true", "jq", "sort", "uniq",
}


def targets(prog: str, args: list[str]) -> list[str] | None:
    """The paths `prog args` writes; None when `prog` is not one of these tools."""
    if prog == "patch":
        return _patch(args)
    if prog in ("tar", "bsdtar", "gtar"):
        return _tar(args)
    if prog == "unzip":
        return [] if any(a in ("-l", "-t", "-v", "-Z", "-p", "-c", "-z") for a in args) else [_value(args, ("-d",)) or "."]
    if prog == "curl":
        return _curl(args)
    if prog == "wget":
        found = [v for v in (_value(args, ("-O", "--output-document")), _value(args, ("-o", "--output-file", "-a", "--append-output"))) if v]
        return [*found, _value(args, ("-P", "--directory-prefix")) or ("." if not found else "")]
    if prog == "find":
        return _find(args)
    if prog in _ELSEWHERE:
        where = _value(args, _ELSEWHERE[prog])
        return [where] if where else []
    return None


# Build tools and the option that makes them run (and write) in another directory.
_ELSEWHERE = {"make": ("-C", "--directory"), "gmake": ("-C", "--directory"), "npm": ("--prefix", "-C"), "pnpm": ("-C", "--dir", "--prefix"),
              "yarn": ("--cwd",), "npx": ("--prefix",), "cargo": ("--manifest-path",), "ninja": ("-C",), "cmake": ("-B",)}


def _value(args: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the last of `names` (`-o X`, `-oX`, `--output=X`, `--output X`, and a short
    option ending a cluster: `-sSLo X`)."""
    found = None
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else None
        for n in names:
            if a == n:
                found = nxt
            elif n.startswith("--") and a.startswith(n + "="):
                found = a.split("=", 1)[1]
            elif len(n) == 2 and not a.startswith("--") and a.startswith("-") and len(a) > 2:
                k = a.find(n[1], 1)
                if k > 0 and (k == 1 or a[1:k].isalpha()):  # `-Cdir`, or ending a cluster: `-sSLo X`
                    found = a[k + 1 :] or nxt
    return found


def _patch(args: list[str]) -> list[str]:
    out = [v for v in (_value(args, ("-o", "--output")), _value(args, ("-d", "--directory"))) if v]
    valued = ("-o", "--output", "-d", "--directory", "-i", "--input", "-p", "-F", "-B", "-D", "-r", "--reject-file", "-z", "-V", "-Y")
    pos = [a for i, a in enumerate(args) if not a.startswith("-") and not (i and args[i - 1] in valued)]
    if pos:
        out.append(pos[0])  # `patch FILE [PATCH]`: the file to patch
    elif not _value(args, ("-o", "--output", "-d", "--directory")):
        out.append(".")  # the files the patch names, where it runs
    return out


def _tar(args: list[str]) -> list[str]:
    flags = ""
    if args and not args[0].startswith("-"):
        flags = args[0]  # old style: `tar xzf a.tgz`
    flags += "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    longs = {a.split("=", 1)[0] for a in args if a.startswith("--")}
    extract = "x" in flags or bool(longs & {"--extract", "--get"})
    create = bool(set(flags) & set("cru")) or bool(longs & {"--create", "--append", "--update", "--concatenate"})
    archive = _value(args, ("-f", "--file"))
    if archive is None and args and "f" in flags[: len(args[0])] and not args[0].startswith("-"):
        archive = next((a for a in args[1:] if not a.startswith("-")), None)
    out: list[str] = []
    if extract:
        out.append(_value(args, ("-C", "--directory")) or ".")
    if create and archive and archive != "-":
        out.append(archive)
    return out


def _curl(args: list[str]) -> list[str]:
    out = [v for v in (_value(args, ("-o", "--output")), _value(args, ("-D", "--dump-header")), _value(args, ("-c", "--cookie-jar"))) if v]
    remote_name = any(a in ("-O", "--remote-name", "--remote-name-all") or (a.startswith("-") and not a.startswith("--") and "O" in a) for a in args)
    if remote_name:
        out.append(_value(args, ("--output-dir",)) or ".")
    return out


def _find(args: list[str]) -> list[str]:
    """The search roots, when the expression deletes or runs a command that may write what it finds."""
    roots = [a for a in args[: next((i for i, a in enumerate(args) if a.startswith(("-", "(", "!"))), len(args))]]
    writes = any(a in ("-delete", "-fprint", "-fprint0", "-fprintf", "-fls") for a in args)
    for i, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok", "-okdir") and i + 1 < len(args):
            writes = writes or args[i + 1].rsplit("/", 1)[-1] not in _READERS
    return (roots or ["."]) if writes else []
