"""The commands a systemd service unit starts, read as systemd reads them (systemd.service(5)
``ExecStart=``, systemd.exec(5) ``Environment=``, systemd.syntax(7)); see
:mod:`kvlint.manifests.systemd_units`. Apart from it so that a script writing a unit through a
here-document (``cat > /etc/systemd/system/vllm.service <<EOF``) reads the unit the same way."""

from __future__ import annotations

import re
import shlex

from kvlint.manifests.shell_words import Word, split_script

__all__ = ["unit_commands", "unit_refusal"]

MAX_LINES = 20_000
_SECTION = re.compile(r"^\s*\[([^\]]{1,60})\]\s*$")
_SETTING = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]{0,60})\s*=\s*(.*)$")


def _settings(text: str) -> list[tuple[str, str, str, int]]:
    """``(section, key, value, line)`` of every setting, continuations joined."""
    out: list[tuple[str, str, str, int]] = []
    section = ""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines()[:MAX_LINES], 1):
        line = raw.rstrip()
        if not pending:
            if not line.strip() or line.lstrip().startswith(("#", ";")):
                continue
            found = _SECTION.match(line)
            if found is not None:
                section = found.group(1).strip()
                continue
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        joined = " ".join(part.strip() for part in pending)
        pending = []
        setting = _SETTING.match(joined)
        if setting is not None:
            out.append((section, setting.group(1), setting.group(2), start))
    return out


def _environment(value: str) -> list[str]:
    """The ``NAME=value`` items of one ``Environment=`` setting."""
    try:
        items = shlex.split(value)
    except ValueError:
        return []
    return [item for item in items if re.match(r"[A-Za-z_]\w*=", item)]


def unit_commands(text: str, first_line: int = 1) -> list[list[Word]]:
    """The ``[Service]`` section's ``ExecStart=`` commands, each word on its line (the
    unit's first line being ``first_line``), the ``Environment=`` items set before it as
    assignments in front; an empty ``ExecStart=`` resets the list (systemd.service(5)), as
    :func:`unit_refusal` counts them."""
    env: list[str] = []
    commands: list[list[Word]] = []
    for section, key, value, line in _settings(text):
        if section != "Service":
            continue
        at = line + first_line - 1
        if key == "Environment":
            env.extend(_environment(value))
        elif key == "ExecStart" and not value.strip():
            commands = []
        elif key == "ExecStart":
            command = value.strip().lstrip("-@+!:")
            words = [w.text for c in split_script(command) for w in c]
            if words:
                commands.append([Word(item, at) for item in env] +
                                [Word(word, at) for word in words])
    return commands


def unit_refusal(text: str) -> tuple[int, str] | None:
    """``(line, why)`` when systemd refuses to load the unit for a reason kvlint reads:
    more than one ``ExecStart=`` (sections of one name merge; an empty ``ExecStart=``
    resets the list) in a service whose ``Type=`` is not ``oneshot`` (``simple`` by
    default): "Service has more than one ExecStart= setting, which is only allowed for
    Type=oneshot services. Refusing." (src/core/service.c, ``service_verify``: ``s->type !=
    SERVICE_ONESHOT && s->exec_command[SERVICE_EXEC_START]->command_next``, read in the
    revision the code index stores; not pinned to a release)."""
    starts: list[int] = []
    kind = "simple"
    for section, key, value, line in _settings(text):
        if section != "Service":
            continue
        if key == "Type" and value.strip():
            kind = value.strip()
        elif key == "ExecStart":
            starts = [] if not value.strip() else [*starts, line]
    if len(starts) > 1 and kind != "oneshot":
        return starts[1], (f"the unit's [Service] has {len(starts)} ExecStart= settings "
                           f"(lines {', '.join(map(str, starts[:4]))}) and Type={kind}: "
                           "systemd allows more than one only for Type=oneshot and refuses "
                           "the unit ('Service has more than one ExecStart= setting ... "
                           "Refusing.'), so nothing in it starts; keep one ExecStart=")
    return None
