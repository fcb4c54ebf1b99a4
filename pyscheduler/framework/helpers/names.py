"""apimachinery's name validation with its exact 1.36 messages (``validate/content``: ``IsLabelKey``, also
known as ``IsQualifiedName``; ``IsLabelValue``; ``IsDNS1123Subdomain``), and kube's
``IsExtendedResourceName``.

Functions named ``*_errors`` return every message apimachinery would, in its order (empty: valid);
``*_error`` returns them joined with "; " (None: valid), the way field errors print them.
"""

from __future__ import annotations

import re

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(f"^{_QNAME_FMT}$")
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    f"'{_QNAME_FMT}')"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    f"regex used for validation is '({_QNAME_FMT})?')"
)
_DNS1123_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1123_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_DNS1123_SUBDOMAIN_FMT}')"
)


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(_DNS1123_MSG)
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName (what ValidateLabelName and label selector keys use)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {e}" for e in dns1123_subdomain_errors(prefix))
    else:
        return [
            f"a valid label key {_QNAME_MSG} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME_RE.match(name):
        errs.append(f"name part {_QNAME_MSG}")
    return errs


def label_value_errors(value: str) -> list[str]:
    """IsValidLabelValue: empty, or at most 63 characters of the qualified-name alphabet."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if value and not _QNAME_RE.match(value):
        errs.append(_LABEL_VALUE_MSG)
    return errs


def qualified_name_error(value: str) -> str | None:
    return "; ".join(qualified_name_errors(value)) or None


def label_value_error(value: str) -> str | None:
    return "; ".join(label_value_errors(value)) or None


# ------------------------------------------------------------------------ resource names (v1helper)

DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
REQUESTS_PREFIX = "requests."
HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"


def is_prefixed_native_resource(name: str) -> bool:
    return DEFAULT_NAMESPACE_PREFIX in name


def is_native_resource(name: str) -> bool:
    return "/" not in name or is_prefixed_native_resource(name)


def is_extended_resource_name(name: str) -> bool:
    """kube's v1helper.IsExtendedResourceName: a name with a domain outside kubernetes.io, not a quota
    ``requests.`` name, and valid as a quota name once ``requests.`` is put in front of it."""
    if is_native_resource(name) or name.startswith(REQUESTS_PREFIX):
        return False
    return not qualified_name_errors(REQUESTS_PREFIX + name)


def is_scalar_resource_name(name: str) -> bool:
    """schedutil.IsScalarResourceName: extended, hugepages-*, kubernetes.io/* and attachable-volumes-*."""
    return (
        is_extended_resource_name(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or is_prefixed_native_resource(name)
        or name.startswith(ATTACHABLE_VOLUMES_PREFIX)
    )
