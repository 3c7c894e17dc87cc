"""A command line read with bash's grammar (guard/bash.py): every simple command it can run, in the
directory it runs in, with its words as bash expands them (guard/words.py) and its redirections.
Lists, pipelines, subshells and brace groups; `if`/`elif`/`else`, `case`, `while`/`until`, `for`
(each value when known); functions (their body, where they are called, with the arguments as $1…);
command and process substitutions and what here-documents expand. A branch that may or may not run
leaves the directory unknown when the branches disagree. Each simple command is then peeled by
guard/unwrap.py. What the grammar gives that the hook does not read is refused."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from spark_git.guard import bash, gitcmd, runtime, unwrap, words
from spark_git.guard.unwrap import Cwd, Seg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from tree_sitter import Node

    State = tuple[Cwd, dict[str, str], dict[str, str], dict[str, Node]]  # where it stands, variables, exported, functions

MAX_DEPTH = 8  # nested `bash -c` / `eval` / function levels judged; deeper is refused
_MAX_VALUES = 32  # a `for` loop is followed value by value up to this many
_SEQUENCE = {"program", "list", "compound_statement", "do_group", "else_clause", "negated_command"}
_EXPRESSIONS = {"test_command", "postfix_expression", "binary_expression", "unary_expression", "parenthesized_expression",
                "arithmetic_expansion", "ternary_expression", "word", "number", "variable_name"}
_OUTPUT = (">", ">>", ">|", "&>", "&>>", "<>", ">&", "&>|")
POWERSHELL = "__spark_powershell__"  # set among a line's variables while it is PowerShell (guard/pwsh.py)


def commands(line: str, here: Path, env: dict[str, str], depth: int = 0, exported: dict[str, str] | None = None) -> list[Seg]:
    """Every simple command `line` runs, started in `here` with the shell variables `env`."""
    if POWERSHELL in env:
        from spark_git.guard import pwsh

        return pwsh.segments(line, here, env, commands, depth, exported)
    w = Walker(Cwd(here, []), dict(env), {} if exported is None else dict(exported), {}, depth)
    return w.read(line)


class Walker:
    """One shell reading a line: where it stands, its variables and functions; the commands found."""

    __slots__ = ("cwd", "depth", "exported", "functions", "out", "powershell", "variables")

    def __init__(self, cwd: Cwd, variables: dict[str, str], exported: dict[str, str], functions: dict[str, Node], depth: int) -> None:
        self.cwd = cwd
        self.variables = variables
        self.exported = exported
        self.functions = functions
        self.depth = depth
        self.out: list[Seg] = []
        self.powershell = False

    def read(self, line: str) -> list[Seg]:
        if self.depth > MAX_DEPTH:
            return [Seg([], self.cwd.here, [], {}, unwrap.unknown(f"commands nested more than {MAX_DEPTH} levels deep (bash -c, eval, functions)"))]
        root = bash.parse(line)
        if isinstance(root, str):
            return [Seg([], self.cwd.here, [], {}, bash.refusal(root))]
        start = len(self.out)
        try:
            self.statement(root)
        except words.Unreadable as e:
            self.out.append(Seg([], self.cwd.here, [], {}, bash.refusal(f"it does not read {e}")))
        return self.out[start:]

    def nested(self, script: str, same_shell: bool, env: dict[str, str], powershell: bool = False) -> list[Seg]:
        """A script this line hands to a shell: `eval`/`trap` (same_shell: its `cd`s and variables stay)
        or `bash -c` (a new shell, starting here with `env`)."""
        if powershell:
            from spark_git.guard import pwsh

            return pwsh.segments(script, self.cwd.here, {**env, POWERSHELL: "1"}, commands, self.depth + 1, dict(self.exported))
        if same_shell:
            w = Walker(self.cwd, self.variables, self.exported, self.functions, self.depth + 1)
        else:
            w = Walker(Cwd(self.cwd.here, []), dict(env), dict(self.exported), dict(self.functions), self.depth + 1)
        return w.read(script)

    # -- statements ------------------------------------------------------------------------------

    def statement(self, node: Node) -> None:
        t = node.type
        if t == "comment" or not node.is_named:
            return
        if t in _SEQUENCE:
            self._sequence(node)
        elif t == "subshell":
            self._scoped(lambda: self._sequence(node))
        elif t == "pipeline":
            parts = [c for c in node.named_children if c.type != "comment"]
            for c in parts:  # each side of a pipe runs in a subshell of its own
                self._scoped(partial(self.statement, c)) if len(parts) > 1 else self.statement(c)
        elif t == "command":
            self._command(node, [])
        elif t == "redirected_statement":
            self._redirected(node)
        elif t in ("variable_assignment", "variable_assignments"):
            pairs = [node] if t == "variable_assignment" else [c for c in node.named_children if c.type == "variable_assignment"]
            self.out += unwrap.simple(self, [], dict(self._assignment(p) for p in pairs), [])
        else:
            self._compound(node)

    def _compound(self, node: Node) -> None:
        t = node.type
        if t == "declaration_command":
            self._declaration(node)
        elif t == "unset_command":
            for c in node.named_children:
                self.variables.pop(words.text(c), None)
                self.functions.pop(words.text(c), None)
        elif t == "if_statement":
            self._if(node)
        elif t == "while_statement":
            self._each(node.children_by_field_name("condition"))
            body = node.child_by_field_name("body")
            self._branches([partial(self.statement, body)] if body else [], none=True)
        elif t in ("for_statement", "c_style_for_statement"):
            self._for(node)
        elif t == "case_statement":
            self._case(node)
        elif t == "function_definition":
            name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
            if name is not None and body is not None:
                self.functions[words.text(name)] = body
        elif t in _EXPRESSIONS:
            self._substitutions_in(node)
        else:
            raise words.Unreadable(f"`{words.text(node)[:40]}` ({t})")

    def _sequence(self, node: Node) -> None:
        kids = node.children
        for i, c in enumerate(kids):
            background = i + 1 < len(kids) and kids[i + 1].type == "&"
            self._scoped(partial(self.statement, c)) if background else self.statement(c)

    def _each(self, nodes: list[Node]) -> None:
        for n in nodes:
            self.statement(n)

    def _if(self, node: Node) -> None:
        self._each(node.children_by_field_name("condition"))
        branches: list[Callable[[], object]] = [lambda: self._each(_body(node))]
        has_else = False
        for c in node.named_children:
            if c.type == "elif_clause":
                branches.append(partial(self._each, [*c.children_by_field_name("condition"), *_body(c)]))
            elif c.type == "else_clause":
                has_else = True
                branches.append(partial(self.statement, c))
        self._branches(branches, none=not has_else)

    def _for(self, node: Node) -> None:
        body = node.child_by_field_name("body")
        var = node.child_by_field_name("variable")
        if node.type == "c_style_for_statement" or var is None:
            self._substitutions_in(node, skip=body)
            self._branches([lambda: self.statement(body)] if body else [], none=True)
            return
        given = node.children_by_field_name("value")
        values = [v for n in given for v in words.expand(n, self._ctx())] if given else None
        name = words.text(var)
        if values is None or len(values) > _MAX_VALUES or any("$" in v or "__spark_subst__" in v for v in values):
            self.variables.pop(name, None)
            self._branches([lambda: self.statement(body)] if body else [], none=True)
            return
        for v in values:
            self.variables[name] = v
            if body is not None:
                self.statement(body)

    def _case(self, node: Node) -> None:
        value = node.child_by_field_name("value")
        if value is not None:
            words.expand(value, self._ctx())
        items = [c for c in node.named_children if c.type == "case_item"]
        for item in items:
            for pattern in item.children_by_field_name("value"):
                self._substitutions_in(pattern)
        self._branches([partial(self._each, _body(i)) for i in items], none=True)

    def _declaration(self, node: Node) -> None:
        keyword = words.text(node.children[0]) if node.children else ""
        for c in node.named_children:
            if c.type == "variable_assignment":
                name, value = self._assignment(c)
                self.variables[name] = self.exported[name] = value
            elif c.type == "variable_name" and keyword == "export" and words.text(c) in self.variables:
                self.exported[words.text(c)] = self.variables[words.text(c)]
            elif c.type not in ("word", "variable_name"):
                words.expand(c, self._ctx())  # `declare -x "X=$(…)"`: what it runs is judged

    # -- simple commands ---------------------------------------------------------------------------

    def _command(self, node: Node, outer: list[Node]) -> None:
        """A simple command; `outer`: the redirections tree-sitter hangs on a statement around it."""
        local: dict[str, str] = {}
        argv: list[str] = []
        stdin: list[str] = []
        after: list[Node] = []
        redirects = [t for r in outer for t in self._redirect(r, stdin, after)]
        for c in node.named_children:
            if c.type == "variable_assignment":
                k, v = self._assignment(c)
                local[k] = v
            elif c.type == "command_name":
                argv += [w for n in c.named_children for w in words.expand(n, self._ctx())]
            elif c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects = [*redirects, *self._redirect(c, stdin, after)]
            elif c.type != "comment":
                argv += words.expand(c, self._ctx())
        if argv and argv[0] in self.functions:
            self._call(argv, redirects)
        else:
            segs = unwrap.simple(self, argv, local, redirects)
            if stdin and segs and segs[-1].words:
                segs[-1].stdin = "\n".join(stdin)
            self.out += segs
        for n in after:  # what follows a here-document's marker on its line (`cat <<EOF | sh && x`)
            self.statement(n)

    def _call(self, argv: list[str], redirects: list[str]) -> None:
        """A function called: its body, with $1… the arguments."""
        if redirects:
            self.out.append(Seg([], self.cwd.here, redirects, {}))
        if self.depth >= MAX_DEPTH:
            self.out.append(Seg(argv, self.cwd.here, [], {}, unwrap.unknown(f"functions nested more than {MAX_DEPTH} levels deep")))
            return
        saved = {k: self.variables.get(k) for k in ("@", "*", "#", *map(str, range(1, 10)))}
        self.variables.update({"@": "\0".join(argv[1:]), "#": str(len(argv) - 1)})
        self.variables.update({str(i): a for i, a in enumerate(argv[1:10], 1)})
        for k in map(str, range(len(argv), 10)):
            self.variables.pop(k, None)
        self.depth += 1
        try:
            self.statement(self.functions[argv[0]])
        finally:
            self.depth -= 1
            for k, v in saved.items():
                self.variables.pop(k, None) if v is None else self.variables.__setitem__(k, v)

    def _redirected(self, node: Node) -> None:
        body = node.child_by_field_name("body")
        if body is not None:
            self._with_redirects(body, node.children_by_field_name("redirect"))

    def _with_redirects(self, body: Node, redirects: list[Node]) -> None:
        """tree-sitter-bash hangs `> f` of `a && b > f` / `a | b > f` on the whole list; bash gives it
        to the last command only."""
        if body.type in ("list", "pipeline"):
            parts = [c for c in body.named_children if c.type != "comment"]
            scoped = body.type == "pipeline" and len(parts) > 1
            for c in parts[:-1]:
                self._scoped(partial(self.statement, c)) if scoped else self.statement(c)
            if parts:
                last = parts[-1]
                self._scoped(lambda: self._with_redirects(last, redirects)) if scoped else self._with_redirects(last, redirects)
            return
        if body.type == "command":
            self._command(body, redirects)
            return
        if body.type == "redirected_statement" and body.child_by_field_name("body") is not None:
            inner = body.child_by_field_name("body")
            assert inner is not None
            self._with_redirects(inner, [*body.children_by_field_name("redirect"), *redirects])
            return
        stdin: list[str] = []
        after: list[Node] = []
        targets = [t for r in redirects for t in self._redirect(r, stdin, after)]
        if targets:
            self.out.append(Seg([], self.cwd.here, targets, {}))
        self.statement(body)
        for n in after:
            self.statement(n)

    def _redirect(self, node: Node, stdin: list[str], after: list[Node]) -> list[str]:
        """The file an output redirection writes; what a here-document or here-string feeds (its
        command substitutions are judged); `after`: statements tree-sitter nests in a here-document's
        redirection (the rest of its line)."""
        if node.type != "file_redirect":
            targets: list[str] = []
            for c in node.named_children:
                if c.type == "file_redirect":
                    targets += self._redirect(c, stdin, after)
                elif c.type in ("heredoc_body", "string", "raw_string", "word", "concatenation", "simple_expansion", "expansion",
                                "command_substitution", "ansi_c_string", "number"):
                    self._substitutions_in(c)
                    stdin.append(words.text(c))
                elif c.type not in ("heredoc_start", "heredoc_end", "comment"):
                    after.append(c)
            return targets
        op = next((words.text(c) for c in node.children if not c.is_named), "")
        dest = node.child_by_field_name("destination") or (node.named_children[-1] if node.named_children else None)
        if dest is None:
            return []
        target = words.one(dest, self._ctx())
        if op not in _OUTPUT or (op in (">&", "<>") and (target.isdigit() or target == "-")):
            return []
        return [target]

    def _assignment(self, node: Node) -> tuple[str, str]:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        return words.text(name) if name else "", words.one(value, self._ctx()) if value is not None else ""

    # -- expansions --------------------------------------------------------------------------------

    def _ctx(self) -> words.Context:
        return words.Context(self.variables, self.cwd.here, self._substitute)

    def _substitute(self, node: Node) -> str:
        """Judges what `$(…)` / `<(…)` runs (in a subshell, here); its value when the hook can know it."""
        inner = [c for c in node.named_children if c.type != "comment"]
        first = len(self.out)
        self._scoped(lambda: self._each(inner))
        body = "\n".join(words.text(c) for c in inner)
        self.cwd.values.append(body)
        k = len(self.cwd.values) - 1
        value = None
        if node.type == "command_substitution" and len(inner) == 1:
            value = _echoed(self.out[first:]) or runtime.evaluate(body, self.cwd.here)
        return value if value is not None and runtime.safe(value) else f"__spark_subst__{k}_"

    def _substitutions_in(self, node: Node, skip: Node | None = None) -> None:
        for sub in words.substitutions(node):
            if skip is None or not (skip.start_byte <= sub.start_byte < skip.end_byte):
                self._substitute(sub)

    # -- scopes and branches -----------------------------------------------------------------------

    def _snap(self) -> State:
        return self.cwd.copy(), dict(self.variables), dict(self.exported), dict(self.functions)

    def _scoped(self, run: Callable[[], object]) -> None:
        """Runs `run` in a subshell: its `cd`s, variables and functions do not outlive it."""
        saved = self._snap()
        try:
            run()
        finally:
            self._restore(saved)

    def _restore(self, saved: State) -> None:
        cwd, variables, exported, functions = saved
        self.cwd.here, self.cwd.old, self.cwd.stack = cwd.here, cwd.old, list(cwd.stack)
        for mine, theirs in ((self.variables, variables), (self.exported, exported)):
            mine.clear()
            mine.update(theirs)
        self.functions.clear()
        self.functions.update(functions)

    def _branches(self, branches: list[Callable[[], object]], none: bool) -> None:
        """Runs each branch from the same start (`none`: maybe none runs); afterwards what they all
        agree on is known, the rest unknown."""
        start = self._snap()
        ends = [start] if none else []
        for b in branches:
            self._restore(start)
            b()
            ends.append(self._snap())
        if not ends:
            return
        merged = ends[0][0].copy()
        if any(e[0].here != merged.here for e in ends):
            merged.here = gitcmd.UNKNOWN_DIR
        variables = {k: v for k, v in ends[0][1].items() if all(e[1].get(k) == v for e in ends)}
        exported = {k: v for k, v in ends[0][2].items() if all(e[2].get(k) == v for e in ends)}
        functions = {k: v for e in ends for k, v in e[3].items()}  # a function any branch defined may be called
        self._restore((merged, variables, exported, functions))


def _echoed(found: list[Seg]) -> str | None:
    """What `$(echo WORDS)` / `$(printf %s WORD)` prints, when its words are known."""
    if len(found) != 1 or found[0].redirects or found[0].refuse:
        return None
    w = found[0].words
    args = w[1:] if w[:1] == ["echo"] else w[2:] if w[:2] == ["printf", "%s"] and len(w) == 3 else None
    if args is None or any(a.startswith("-") or "$" in a or "__spark_subst__" in a for a in args):
        return None
    return " ".join(args)


def _body(node: Node) -> list[Node]:
    """The statements of an `if`/`elif`/case item: its named children that are neither its
    condition, its value nor a nested clause."""
    skip = {c.id for f in ("condition", "value") for c in node.children_by_field_name(f)}
    return [c for c in node.named_children if c.id not in skip and c.type not in ("elif_clause", "else_clause", "comment")]

