"""Scripts a script hands over through here-documents, read where they run.

Launch scripts often write the server's command rather than run it: a Slurm job or a cloud
VM's start-up script writes ``serve.sh`` (or a systemd unit) with ``cat > FILE <<EOF`` and
runs it a few lines later, or pipes a script into a shell (``bash <<'EOF'``, ``ssh HOST
<<EOF``). The shell reads such a body as it reads any script, so kvlint does too:

* a shell (``sh``, ``bash``... with options only, ``-s`` included) or ``ssh HOST`` without a
  command runs its here-document as its script;
* ``cat > FILE <<EOF``, ``cat <<EOF > FILE``, ``tee [-a] FILE <<EOF`` and ``cat <<EOF |
  [sudo] tee FILE`` write the body to FILE; a later command that runs FILE (``bash FILE``,
  ``./FILE``, ``sbatch FILE``, ``source FILE``, after ``sudo``/``nohup``/``srun``) runs the
  body with its arguments bound (:func:`~kvlint.manifests.called_scripts.bind_arguments`),
  and a systemd unit written so (``*.service``) starts its ``ExecStart=`` commands
  (a setup script writes a unit to start it).

The body is read with the writing script's variables, as for an ``sh -c`` script: an unquoted
delimiter has the writing shell expand it, and a quoted one leaves the expansion to the shell
that runs it, which sees the exported variables; kvlint does not tell the two apart
(:attr:`~kvlint.manifests.shell_words.Heredoc.quoted` records which it was).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from kvlint.manifests.called_scripts import bind_arguments
from kvlint.manifests.engine_launch import SHELLS
from kvlint.manifests.shell_words import Heredoc, Word, split_env_prefix
from kvlint.manifests.systemd_exec import unit_commands

__all__ = ["SSH_VALUE_OPTIONS", "expand_heredocs", "ssh_host_index"]

_Written = dict[str, Heredoc]
"""Files a script has written through here-documents, by the path as written."""

_RUNNERS = frozenset({"sudo", "nohup", "setsid", "exec", "srun", "sbatch", "source", ".",
                      "time", *SHELLS})
"""Programs that run a script file given after them (with options between)."""
_TAKES_VALUE = frozenset({"-u", "-g", "-p", "-J", "-o", "-e", "-N", "-n", "-c", "-t",
                          "--partition", "--job-name", "--output", "--error"})
"""Options of ``sudo``/``sbatch``/``srun`` written with their value as the next word."""


MAX_DEPTH = 3
"""Here-documents followed inside here-documents."""


def expand_heredocs(commands: Sequence[list[Word]], depth: int = 0) -> list[list[Word]]:
    """``commands`` with each command that runs a here-document replaced by what it runs
    (:func:`_heredoc_commands`), the assignments before it applied to them."""
    out: list[list[Word]] = []
    written: _Written = {}
    for index, command in enumerate(commands):
        prefix, rest = split_env_prefix(list(command))
        fed = _heredoc_commands(commands, index, rest, written) if depth < MAX_DEPTH else None
        if fed is None:
            out.append(list(command))
            continue
        assigned = [Word(f"{k}={v}", command[0].line) for k, v in prefix.items()]
        out.extend(expand_heredocs([[*assigned, *c] for c in fed], depth + 1))
    return out


def _shell_words(words: Sequence[Word]) -> bool:
    """``words`` start a shell with options only (``bash``, ``sudo -E bash -s``)."""
    i = 0
    while i < len(words) and words[i].text == "sudo":
        i += 1
        while i < len(words) and words[i].text.startswith("-"):
            i += 2 if words[i].text in _TAKES_VALUE else 1
    if i >= len(words) or PurePosixPath(words[i].text).name not in SHELLS:
        return False
    return all(w.text.startswith("--") or (w.text.startswith("-") and "c" not in w.text)
               for w in words[i + 1:])


def _heredoc_commands(commands: Sequence[Sequence[Word]], index: int, rest: Sequence[Word],
                     written: _Written) -> list[list[Word]] | None:
    """What ``commands[index]`` (``rest``: without its assignments) runs through a
    here-document, in place of it: a shell's script, a written file run, a written systemd
    unit's commands; ``[]`` for a script only written (recorded in ``written``); ``None``
    for a command that does none of these."""
    command = commands[index]
    heredoc = command[0].heredoc if command else None
    if heredoc is not None and rest and (
            _shell_words(rest) or (rest[0].text == "ssh" and
                                   ssh_host_index(rest) == len(rest) - 1)):
        return _body_commands("", heredoc)
    target = _written_file(commands, index)
    if target is not None and target[0]:
        written[target[0]] = target[1]
        return _body_commands(*target) if target[0].lower().endswith(".service") else []
    ran = _runs_written(rest, written)
    return None if ran is None else _body_commands("", *ran)


SSH_VALUE_OPTIONS = frozenset("bcDEeFIiJLlmOopQRSWw")
"""``ssh`` options that take a value (OpenSSH's ssh(1)); the others are flags."""


def ssh_host_index(rest: Sequence[Word]) -> int:
    """The index of the host in ``ssh [options] HOST [COMMAND...]`` (``rest[0]`` is ssh)."""
    i = 1
    while i < len(rest) and rest[i].text.startswith("-") and len(rest[i].text) > 1:
        flag = rest[i].text
        i += 2 if flag[-1] in SSH_VALUE_OPTIONS and len(flag) == 2 else 1
    return i


def _written_file(commands: Sequence[Sequence[Word]], index: int) -> tuple[str, Heredoc] | None:
    """``(FILE, body)`` when ``commands[index]`` writes a here-document to FILE."""
    command = commands[index]
    heredoc = command[0].heredoc if command else None
    if heredoc is None:
        return None
    rest = split_env_prefix(list(command))[1]
    while rest and rest[0].text == "sudo":
        rest = rest[1:]
    if not rest:
        return None
    if rest[0].text == "cat" and command[0].writes:
        return command[0].writes, heredoc
    if rest[0].text == "tee":
        return _tee_target(rest), heredoc
    if rest[0].text == "cat" and len(rest) == 1 and index + 1 < len(commands) and \
            command[-1].ends == "|":
        after = [w for w in commands[index + 1] if w.text != "sudo"]
        if after and after[0].text == "tee":
            return _tee_target(after), heredoc
    return None


def _tee_target(words: Sequence[Word]) -> str:
    return next((w.text for w in words[1:] if not w.text.startswith("-")), "")


def _key(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _runs_written(rest: Sequence[Word], written: _Written) -> tuple[Heredoc, list[Word]] | None:
    """``(body, arguments)`` when ``rest`` (a command without its assignments) runs a file
    that a here-document wrote."""
    if not written:
        return None
    keys = {_key(path): doc for path, doc in written.items() if path}
    names = {PurePosixPath(path).name: doc for path, doc in keys.items()
             if "$" not in PurePosixPath(path).name}
    i = 0
    while i < len(rest) and i < 16:
        text = rest[i].text
        found = keys.get(_key(text)) or names.get(PurePosixPath(text).name)
        if found is not None:
            return found, list(rest[i + 1:])
        if text.startswith("-"):
            i += 2 if text in _TAKES_VALUE else 1
            continue
        if PurePosixPath(text).name not in _RUNNERS:
            return None
        i += 1
    return None


def _body_commands(path: str, heredoc: Heredoc, args: Sequence[Word] = ()) -> list[list[Word]]:
    """The commands of a written file as they run: a systemd unit's ``ExecStart=`` lines, or
    the script with ``args`` bound to its positional parameters; each word on its line."""
    from kvlint.manifests.shell_arrays import file_commands

    first = heredoc.line or 1
    if path.lower().endswith(".service"):
        return unit_commands(heredoc.body, first)
    return [c for c in file_commands(bind_arguments(heredoc.body, args), first) if c]
