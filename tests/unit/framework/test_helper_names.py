"""The shared name validation says what apimachinery 1.36 says, word for word: these strings reach users
in config errors and FailedScheduling messages."""

from __future__ import annotations

import pytest

from pyscheduler.framework.helpers.names import (
    is_extended_resource_name,
    label_value_errors,
    qualified_name_error,
    qualified_name_errors,
)
from pyscheduler.framework.helpers.timefmt import rfc3339, rfc3339_micro

NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
DNS_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@pytest.mark.parametrize(
    ("key", "errors"),
    [
        pytest.param("zone", [], id="plain"),
        pytest.param("topology.kubernetes.io/zone", [], id="prefixed"),
        pytest.param("/zone", ["prefix part must be non-empty"], id="empty-prefix"),
        pytest.param("Example.com/zone", [f"prefix part {DNS_RULE}"], id="uppercase-prefix"),
        pytest.param("x/", ["name part must be non-empty", f"name part {NAME_RULE}"], id="empty-name"),
        pytest.param("a" * 64, ["name part must be no more than 63 characters"], id="long-name"),
        pytest.param("-bad-", [f"name part {NAME_RULE}"], id="bad-edges"),
        pytest.param(
            "a/b/c",
            [
                f"a valid label key {NAME_RULE} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"
            ],
            id="two-slashes",
        ),
    ],
)
def test_label_keys_are_refused_with_apimachinerys_words(key: str, errors: list[str]) -> None:
    assert qualified_name_errors(key) == errors
    assert qualified_name_error(key) == ("; ".join(errors) or None)


def test_label_values_empty_is_valid_and_long_or_odd_is_not() -> None:
    assert label_value_errors("") == []
    assert label_value_errors("a.b-c_d") == []
    assert label_value_errors("x" * 64) == ["must be no more than 63 characters"]
    assert label_value_errors("a b")[0].startswith("a valid label must be an empty string")


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("example.com/gpu", True),
        ("cpu", False),
        ("kubernetes.io/batteries", False),  # prefixed native
        ("requests.example.com/gpu", False),  # a quota name
        ("example.com/" + "g" * 64, False),  # not a valid quota name once prefixed
        ("example.com/-gpu", False),
    ],
)
def test_extended_resource_names_as_kube_tells_them(name: str, extended: bool) -> None:
    assert is_extended_resource_name(name) is extended


def test_timestamps_as_the_api_server_writes_them() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00Z"
    assert rfc3339(1_700_000_000.9) == "2023-11-14T22:13:20Z"
    assert rfc3339_micro(1_700_000_000.25) == "2023-11-14T22:13:20.250000Z"
