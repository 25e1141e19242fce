"""From a validated submission to what is stored: sanitise every free-text field, then derive texts and metadata.

Sanitisation runs the host's pipeline (the configured layers per field kind) over every string that will be
stored, in one call so that one value gets one placeholder everywhere. It fails closed: a refusal raises
:class:`gateway.api.SanitizationFailed`, which the pack renders as the spec's rejection body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gateway.api import FieldKind, InsufficientData, SanitizationFailed, SanitizationService, off_loop
from gateway_plugins.gim.categories import categorise
from gateway_plugins.gim.models import PROVIDERS, EnvironmentInfo, FixBundle, ModelInfo
from gateway_plugins.gim.schemas import SubmitIssueInput
from gateway_plugins.gim.signatures import ErrorSignature, lexical_tokens, normalise_error
from gateway_plugins.gim.texts import (
    COMBINED,
    ERROR,
    RESOLUTION,
    canonical_title,
    combined_text,
    error_text,
    resolution_text,
)
from gateway_plugins.gim.vocabulary import explanation_terms

__all__ = ["Prepared", "prepare_submission"]

_F, _E, _C = FieldKind.FREE_TEXT, FieldKind.ERROR_MESSAGE, FieldKind.CODE


@dataclass
class Prepared:
    """A sanitised submission with everything the pack stores and embeds."""

    description: str
    error_message: str | None
    code_snippet: str | None
    root_cause: str
    fix_bundle: FixBundle
    model_info: ModelInfo
    environment: EnvironmentInfo
    signature: ErrorSignature
    tokens: list[str]
    texts: dict[str, str]
    title: str
    category: str
    symptoms: list[str] = field(default_factory=list)
    terms: frozenset[str] = frozenset()
    """The explanation terms of the resolution text (:func:`gateway_plugins.gim.vocabulary.explanation_terms`)."""

    @property
    def error(self) -> str:
        """The error as submitted (sanitised): the message, or the description when there is none."""
        return self.error_message or self.description


def _fields(args: SubmitIssueInput) -> dict[str, tuple[str, FieldKind]]:
    fields: dict[str, tuple[str, FieldKind]] = {
        "error_description": (args.error_description, _F),
        "root_cause": (args.root_cause, _F),
        "model": (args.model, _F),
        "provider": (args.provider, _F),
    }
    if args.error_message:
        fields["error_message"] = (args.error_message, _E)
    if args.code_snippet:
        fields["code_snippet"] = (args.code_snippet, _C)
    fix = args.fix_bundle
    for i, action in enumerate(fix.env_actions):
        fields[f"action.{i}.command"] = (action.command, _C)
        fields[f"action.{i}.explanation"] = (action.explanation, _F)
    for i, step in enumerate(fix.verification):
        fields[f"verify.{i}.command"] = (step.command, _C)
        fields[f"verify.{i}.expected_output"] = (step.expected_output, _F)
    if fix.code_fix:
        fields["code_fix"] = (fix.code_fix, _C)
    if fix.patch_diff:
        fields["patch_diff"] = (fix.patch_diff, _C)
    constraints = fix.constraints
    if constraints is not None:
        for i, (name, version) in enumerate(constraints.working_versions.items()):
            fields[f"wv.{i}.name"] = (name, _F)
            fields[f"wv.{i}.version"] = (version, _F)
        for i, text in enumerate(constraints.incompatible_with):
            fields[f"incompatible.{i}"] = (text, _F)
        for i, text in enumerate(constraints.required_environment):
            fields[f"required.{i}"] = (text, _F)
    for key, value in (args.environment.model_dump() if args.environment else {}).items():
        if value:
            fields[f"env.{key}"] = (value, _F)
    return fields


def _check_sufficient(args: SubmitIssueInput) -> None:
    fix = args.fix_bundle
    if not fix.env_actions and not fix.code_fix and not fix.patch_diff:
        raise InsufficientData(
            "The fix bundle holds no fix: give at least one env action, a code_fix or a patch_diff.",
            details={"field": "fix_bundle"},
        )
    if not any(ch.isalnum() for ch in (args.error_message or "") + args.error_description):
        raise InsufficientData(
            "The error description says nothing about the error.", details={"field": "error_description"}
        )


async def sanitized_fields(service: SanitizationService, fields: dict[str, tuple[str, FieldKind]]) -> dict[str, str]:
    """``fields`` through the ``[sanitize]`` layers; ``SanitizationFailed`` (nothing stored) when they refuse."""
    report = await service.sanitize_fields(fields)
    if report.refused:
        details = getattr(report, "details", None) or (
            f"Detected {len(report.findings) or 'some'} potential secrets in submission. "
            "Please remove sensitive data and resubmit."
        )
        raise SanitizationFailed(details, details={"confidence_score": round(report.confidence, 4)})
    return dict(report.fields)


def _rebuild_fix(args: SubmitIssueInput, clean: dict[str, str]) -> FixBundle:
    fix = args.fix_bundle
    constraints = fix.constraints
    data: dict[str, Any] = {
        "env_actions": [
            {
                "order": a.order or i + 1,
                "type": a.type,
                "command": clean[f"action.{i}.command"],
                "explanation": clean[f"action.{i}.explanation"],
            }
            for i, a in enumerate(fix.env_actions)
        ],
        "verification": [
            {
                "order": s.order or i + 1,
                "command": clean[f"verify.{i}.command"],
                "expected_output": clean[f"verify.{i}.expected_output"],
            }
            for i, s in enumerate(fix.verification)
        ],
        "code_fix": clean.get("code_fix"),
        "patch_diff": clean.get("patch_diff"),
        "constraints": {},
    }
    if constraints is not None:
        data["constraints"] = {
            "working_versions": {
                clean[f"wv.{i}.name"]: clean[f"wv.{i}.version"] for i in range(len(constraints.working_versions))
            },
            "incompatible_with": [clean[f"incompatible.{i}"] for i in range(len(constraints.incompatible_with))],
            "required_environment": [clean[f"required.{i}"] for i in range(len(constraints.required_environment))],
        }
    data["env_actions"].sort(key=lambda a: a["order"])
    data["verification"].sort(key=lambda s: s["order"])
    return FixBundle.model_validate(data)


async def prepare_submission(service: SanitizationService, args: SubmitIssueInput) -> Prepared:
    """Sanitise ``args`` and derive the stored texts (raises ``SanitizationFailed`` / ``InsufficientData``)."""
    _check_sufficient(args)
    clean = await sanitized_fields(service, _fields(args))
    return await off_loop(partial(_derive, args, clean), size=sum(map(len, clean.values())))


def _derive(args: SubmitIssueInput, clean: dict[str, str]) -> Prepared:
    description = clean["error_description"]
    error_message = clean.get("error_message") or None
    root_cause = clean["root_cause"]
    fix = _rebuild_fix(args, clean)
    provider = args.provider.strip().lower()
    model_info = ModelInfo(
        provider=provider if provider in PROVIDERS else "other",  # type: ignore[arg-type]
        model_name=clean["model"],
        behavior_notes=[] if provider in PROVIDERS else [f"reported provider: {clean['provider'].strip()[:100]}"],
    )
    environment = EnvironmentInfo.model_validate(
        {key.removeprefix("env."): value for key, value in clean.items() if key.startswith("env.")}
    )
    signature = normalise_error(error_message or description)
    err = error_text(signature, description)
    if not err.strip():
        raise InsufficientData(
            "Nothing of the error is left to match once normalised.", details={"field": "error_message"}
        )
    resolution = resolution_text(root_cause, fix)
    return Prepared(
        description=description,
        error_message=error_message,
        code_snippet=clean.get("code_snippet") or None,
        root_cause=root_cause,
        fix_bundle=fix,
        model_info=model_info,
        environment=environment,
        signature=signature,
        tokens=lexical_tokens(err),
        texts={
            ERROR: err,
            RESOLUTION: resolution,
            COMBINED: combined_text(error_message or description, root_cause, fix),
        },
        title=canonical_title(description, error_message, signature),
        category=categorise(root_cause, error_message or description),
        symptoms=list(signature.key_lines[:5]),
        terms=explanation_terms(resolution),
    )
