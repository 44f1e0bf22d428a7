"""``kvlint rules``, ``kvlint rule`` and ``kvlint schema``: what kvlint checks and emits."""

from __future__ import annotations

import json

import click

from kvlint.cli.session import plugin_registry


@click.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--no-plugins", is_flag=True, help="Do not load third-party plugins.")
def rules_command(fmt: str, no_plugins: bool) -> None:
    """List every rule: code, name, default severity and what it flags."""
    registry = plugin_registry(no_plugins)
    if fmt == "json":
        rows = [{"code": r.code, "name": r.name, "severity": r.severity.value,
                 "summary": r.summary(), "module": r.__module__} for r in registry.rules]
        click.echo(json.dumps(rows, indent=2))
        return
    from tabulate import tabulate

    table = [[r.code, r.name, r.severity.value, r.summary()] for r in registry.rules]
    click.echo(tabulate(table, headers=["code", "name", "severity", "flags"],
                        tablefmt="plain", maxcolwidths=[None, None, None, 60]))


@click.command("rule")
@click.argument("key", metavar="CODE|NAME")
@click.option("--no-plugins", is_flag=True, help="Do not load third-party plugins.")
def rule_command(key: str, no_plugins: bool) -> None:
    """Explain one rule (its documentation)."""
    rule = plugin_registry(no_plugins).rule(key)
    click.echo(f"# {rule.code} {rule.name} ({rule.severity.value})\n")
    click.echo(rule.documentation())


@click.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of --format json output."""
    from kvlint.report import json_schema

    click.echo(json.dumps(json_schema(), indent=2))
