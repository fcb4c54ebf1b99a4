"""A stand-in DRA driver for binding-condition scenarios: it reports device conditions on allocated claims.

A device with ``bindingConditions`` makes the scheduler wait in PreBind until the claim's
``status.devices`` entry for that device has every binding condition True (or one of its
``bindingFailureConditions`` True, which fails the binding). A real driver writes those conditions once
it has attached the device; here a thread does it for the devices a scenario names
(``DraScenario.device_conditions``: device name -> condition types to report True), as soon as a claim
of the scenario's namespace is allocated one of them. A device not named is never reported: the pod
stays in PreBind until the binding timeout.

``DraScenario.device_failures`` (device name -> binding failure condition types) makes the driver fail
the first attachment instead: the first time a claim is allocated such a device, those conditions are
reported True (the scheduler's PreBind fails, a later PostFilter deallocates the claim, which clears
``status.devices``); the next allocation of that device to the claim gets ``device_conditions``.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Mapping, Sequence

from bench.differential.api import Api
from bench.differential.common import JSON, KINDS

REPORT_POLL = 0.2  # seconds between lists of the namespace's claims


class DeviceStatusReporter:
    """Polls the namespace's claims every REPORT_POLL seconds and writes the conditions of newly allocated,
    named devices through the claims' status subresource (retrying on conflict at the next poll)."""

    def __init__(
        self,
        api: Api,
        namespace: str,
        conditions: Mapping[str, Sequence[str]],
        failures: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.api = api
        self.path = KINDS["ResourceClaim"][0].format(ns=namespace)
        self.conditions = {k: tuple(v) for k, v in conditions.items()}
        self.failures = {k: tuple(v) for k, v in (failures or {}).items()}
        self.failed: set[tuple[str, str]] = set()  # (claim uid, device) whose first attachment failed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="device-status", daemon=True)
        self.reported: list[str] = []  # "claim device" for each report written

    def start(self) -> None:
        if self.conditions or self.failures:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(REPORT_POLL):
            try:
                for claim in self.api.items(self.path):
                    self.report(claim)
            except Exception:  # the cluster being torn down under us; try again next poll
                continue

    def report(self, claim: JSON) -> bool:
        """Add status.devices entries for the claim's allocated, named devices that have none yet."""
        st = claim.get("status") or {}
        results = ((st.get("allocation") or {}).get("devices") or {}).get("results") or ()
        have = {(d.get("driver"), d.get("pool"), d.get("device")) for d in st.get("devices") or ()}
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        uid = str((claim.get("metadata") or {}).get("uid", ""))
        new: list[JSON] = []
        failing: list[tuple[str, str]] = []
        for r in results:
            key = (r.get("driver"), r.get("pool"), r.get("device"))
            if key in have:
                continue
            device = str(r.get("device"))
            types = self.conditions.get(device)
            if device in self.failures and (uid, device) not in self.failed:
                types = self.failures[device]
                failing.append((uid, device))
            if types is None:
                continue
            new.append(
                {
                    "driver": key[0],
                    "pool": key[1],
                    "device": key[2],
                    "conditions": [
                        {
                            "type": t,
                            "status": "True",
                            "reason": "Reported",
                            "message": f"{t} reported by the differential's stand-in driver",
                            "lastTransitionTime": now,
                        }
                        for t in types
                    ],
                }
            )
            have.add(key)
        if not new:
            return False
        claim["status"]["devices"] = [*(st.get("devices") or ()), *new]
        code, _ = self.api.cluster.request("PUT", f"{self.path}/{claim['metadata']['name']}/status", claim)
        if code == 200:
            self.reported.extend(f"{claim['metadata']['name']} {d['device']}" for d in new)
            self.failed.update(failing)
        return code == 200
