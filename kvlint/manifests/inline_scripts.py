"""Scripts a command hands to another shell, read as the commands that shell runs:
``sh -c SCRIPT`` (``bash -lc``, after ``nohup``, ``exec`` or assignments), ``ssh HOST
COMMAND``, ``pm2 start``, command substitutions (``CID=$(docker run ...)``: run first) and
here-documents (:mod:`.heredocs`). Used by :mod:`.shell_scripts` for every host script."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kvlint.manifests.engine_launch import SHELLS
from kvlint.manifests.heredocs import expand_heredocs, ssh_host_index
from kvlint.manifests.shell_env import bounded_sub
from kvlint.manifests.shell_words import Word, split_env_prefix, split_script, substitutions

__all__ = ["MAX_INLINE_DEPTH", "inline_scripts"]

MAX_INLINE_DEPTH = 3
"""``sh -c "bash -c '...'"`` is read this deep."""


MAX_SSH_WORDS = 512
"""Words of a remote command kvlint reads (a real one has a few dozen)."""
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def _ssh_script(rest: Sequence[Word], known: dict[str, str]) -> Word | None:
    """The command ``ssh [options] HOST COMMAND...`` runs on the remote host, as one script
    word: ssh joins the words after the host with spaces and the remote shell parses them,
    after the local shell has expanded the variables (those the file assigns a literal are
    put in here, so that a ``;`` in them separates commands as it does there)."""
    words = list(rest[ssh_host_index(rest) + 1:])
    if not words:
        return None
    written = " ".join(w.text for w in words[:MAX_SSH_WORDS])
    if any(w.literal for w in words[:MAX_SSH_WORDS]):
        return Word(written, words[0].line)
    # a variable repeated past any real command stays as written
    text = bounded_sub(_VARIABLE, lambda m: known.get(m.group(1) or m.group(2), m.group(0)),
                       written, written)
    return Word(text, words[0].line)


PM2_VALUE_OPTIONS = frozenset({
    "-n", "--name", "--ext", "--interpreter", "--interpreter-args", "--node-args", "-o",
    "--output", "-e", "--error", "--log-type", "--log-date-format", "--env", "-i",
    "--instances", "--parallel", "-p", "--pid", "-k", "--kill-timeout", "--listen-timeout",
    "--max-memory-restart", "--restart-delay", "--exp-backoff-restart-delay", "-u", "--user",
    "--uid", "--gid", "--namespace", "--cwd", "--hp", "--service-name", "-c", "--cron",
    "--cron-restart", "--only", "--ignore-watch", "--watch-delay", "--stop-exit-codes",
    "--sort"})
"""pm2 options that take a value (``<value>`` in lib/binaries/CLI.js of Unitech/pm2@0060e9fe,
the code index's copy)."""
PM2_OPTIONAL_VALUE = frozenset({"-l", "--log", "--filter-env", "--max-restarts",
                                "--image-name", "--node-version"})
"""pm2 options whose value is optional (``[value]``): commander takes the next word as the
value unless it starts with ``-``. ``start``'s own ``--watch`` takes none."""


def _pm2_command(rest: Sequence[Word]) -> Word | list[Word] | None:
    """What ``pm2 start [options] SCRIPT [options] [-- ARGS]`` runs: a SCRIPT with a space in
    it is a command line pm2 runs as ``bash -c SCRIPT`` (``Common.verifyConfs``, lib/Common.js
    of Unitech/pm2@02c1fff4), returned as one script word; any other SCRIPT is a program, run
    with the words after ``--``."""
    i, script = 2, None
    while i < len(rest):
        text = rest[i].text
        if text == "--":
            break
        if text.startswith("-") and len(text) > 1:
            takes = text in PM2_VALUE_OPTIONS or (
                text in PM2_OPTIONAL_VALUE and i + 1 < len(rest)
                and not rest[i + 1].text.startswith("-"))
            i += 2 if takes else 1
            continue
        if script is None:
            script = rest[i]
        i += 1
    if script is None:
        return None
    if " " in script.text:
        return script
    return [script, *rest[i + 1:]] if i < len(rest) else [script]


def inline_scripts(commands: Sequence[list[Word]], depth: int = 0,
                    known: dict[str, str] | None = None) -> list[list[Word]]:
    """The commands with each ``sh -c SCRIPT`` (``bash -lc``, after ``nohup``, ``exec`` or
    assignments), ``ssh HOST COMMAND`` and ``pm2 start`` replaced by the commands of SCRIPT,
    which that shell runs, and each here-document a shell runs (:mod:`.heredocs`); the
    assignments before it apply to them. A script in a double-quoted word
    still holds its ``$VAR``s: the outer shell would expand them, and so does the
    environment here."""
    out: list[list[Word]] = []
    known = {} if known is None else known
    if depth < MAX_INLINE_DEPTH:  # bash <<EOF, cat > serve.sh <<EOF ... bash serve.sh
        commands = expand_heredocs(commands)
    for command in commands:
        if depth < MAX_INLINE_DEPTH:  # CID=$(docker run ...): the substitution runs first
            for word in command:
                if not word.literal and ("$(" in word.text or "`" in word.text):
                    for substituted in substitutions(word.text):
                        out.extend(inline_scripts(
                            [c for c in split_script(substituted, line=word.line) if c],
                            depth + 1, dict(known)))
        prefix, rest = split_env_prefix(list(command))
        if not rest:
            known.update(prefix)
        script: Word | None = None
        if depth < MAX_INLINE_DEPTH and len(rest) >= 3 and \
                rest[0].text.rsplit("/", 1)[-1] in SHELLS and \
                rest[1].text.startswith("-") and "c" in rest[1].text.lstrip("-"):
            script = rest[2]
        elif depth < MAX_INLINE_DEPTH and len(rest) >= 3 and rest[0].text == "ssh":
            script = _ssh_script(rest, known)
        elif len(rest) >= 3 and rest[0].text.rsplit("/", 1)[-1] == "pm2" and \
                rest[1].text == "start":
            started = _pm2_command(rest)
            if isinstance(started, list):  # pm2 start BINARY [options] -- ARGS
                out.append([*(Word(f"{k}={v}", command[0].line) for k, v in prefix.items()),
                            *started])
                continue
            script = started if depth < MAX_INLINE_DEPTH else None
        if script is not None:
            assigned = [Word(f"{k}={v}", command[0].line) for k, v in prefix.items()]
            inner = [[*assigned, *c] for c in split_script(script.text, line=script.line)
                     if c]
            out.extend(inline_scripts(inner, depth + 1, known))
            continue
        out.append(list(command))
    return out
