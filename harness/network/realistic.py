"""A realistic company network to analyse: departments, regions, contractors, devices, and a few mistakes.

Where the benchmark shapes of :mod:`harness.network.generate` spread abstract
attributes evenly, this one reads like a company: people in departments and
regions, contractors with narrow access, servers that host (bind) their
department's applications, kiosks and badge readers, posture checks on the
sensitive applications. Most access is denied, as in life, and a few mistakes
are planted for an analyst to find:

* ``MISTAKES["typo"]``: an engineer whose attribute is misspelled (no git, no ci);
* ``MISTAKES["contractor"]``: a contractor who also carries ``finance`` (reaches the ledger);
* ``MISTAKES["region"]``: staff in apac, a region no edge router policy serves (allowed, never routed);
* ``MISTAKES["service"]``: a service that no service edge router policy serves;
* finance applications served from EU routers only: finance staff in the US are allowed, never routed;
* ``MISTAKES["policy"]``: a policy whose identity roles match nobody;
* ``MISTAKES["orphan"]``: an identity with no attributes at all.
"""

from __future__ import annotations

import random

#: department -> (its applications, share of the staff)
DEPARTMENTS = {
    "sales": (["crm", "quotes"], 0.25),
    "engineering": (["git", "ci", "artifacts"], 0.30),
    "finance": (["ledger", "payroll"], 0.10),
    "hr": (["hris"], 0.07),
    "support": (["helpdesk"], 0.18),
    "ops": (["ssh", "monitoring"], 0.10),
}
SENSITIVE = {"ledger", "payroll", "hris"}  # posture checks required
COMMON = ["wiki", "mail", "chat"]  # every member of staff
REGIONS = {"eu": 0.45, "us": 0.40, "apac": 0.15}
FIRST = [
    "ana",
    "ben",
    "cara",
    "dev",
    "eve",
    "finn",
    "gia",
    "hugo",
    "ines",
    "jon",
    "kai",
    "lea",
    "milo",
    "nora",
    "omar",
    "pia",
    "quin",
    "rosa",
    "sam",
    "tara",
    "uma",
    "vik",
    "wen",
    "xavi",
    "yara",
    "zoe",
]
LAST = [
    "abe",
    "berg",
    "costa",
    "dahl",
    "eng",
    "ferro",
    "gupta",
    "holm",
    "ito",
    "jung",
    "kovac",
    "lind",
    "mora",
    "novak",
    "ortiz",
    "park",
    "quist",
    "ruiz",
    "sato",
    "toth",
    "ueda",
    "vidal",
    "weber",
    "xu",
    "yilmaz",
    "zhou",
]
MISTAKES = {
    "typo": "enginering",
    "contractor": "contractor.finn.ledger",
    "region": "apac",
    "service": "legacy-reports",
    "policy": "offboarding-review",
    "orphan": "svc-old-backup",
}


def _people(rng: random.Random, count: int) -> list[dict]:
    names: set[str] = set()
    departments, weights = list(DEPARTMENTS), [share for _, share in DEPARTMENTS.values()]
    out = []
    while len(out) < count:
        name = f"{rng.choice(FIRST)}.{rng.choice(LAST)}"
        if name in names:
            name = f"{name}.{len(out)}"
        names.add(name)
        department = rng.choices(departments, weights)[0]
        region = rng.choices(list(REGIONS), list(REGIONS.values()))[0]
        attrs = ["staff", department, region] + (["managers"] if rng.random() < 0.1 else [])
        out.append({"name": name, "type": "User", "roleAttributes": attrs})
    return out


def _contractors(rng: random.Random, count: int) -> list[dict]:
    teams = ["engineering", "support"]
    return [
        {
            "name": f"contractor.{FIRST[n % len(FIRST)]}.{teams[n % 2]}",
            "type": "User",
            "roleAttributes": ["contractors", teams[n % 2]],
        }
        for n in range(count)
    ]


def _devices(kiosks: int, readers: int) -> list[dict]:
    hosts = [
        {"name": f"{app}-host", "type": "Device", "roleAttributes": ["hosts", f"{dept}-hosts"]}
        for dept, (apps, _) in DEPARTMENTS.items()
        for app in apps
    ]
    hosts += [{"name": f"{app}-host", "type": "Device", "roleAttributes": ["hosts", "common-hosts"]} for app in COMMON]
    hosts += [{"name": f"kiosk-{n:02d}", "type": "Device", "roleAttributes": ["kiosks"]} for n in range(1, kiosks + 1)]
    hosts += [
        {"name": f"badge-reader-{n:02d}", "type": "Device", "roleAttributes": ["iot"]} for n in range(1, readers + 1)
    ]
    return hosts


def _mistakes(identities: list[dict]) -> None:
    """Plant the findings (see the module docstring) in the identities."""
    typo = next(i for i in identities if "engineering" in i["roleAttributes"] and "staff" in i["roleAttributes"])
    typo["roleAttributes"] = [MISTAKES["typo"] if a == "engineering" else a for a in typo["roleAttributes"]]
    identities.append({"name": MISTAKES["contractor"], "type": "User", "roleAttributes": ["contractors", "finance"]})
    identities.append({"name": MISTAKES["orphan"], "type": "Device", "roleAttributes": []})


def _services() -> list[dict]:
    out = [
        {"name": app, "roleAttributes": [f"{dept}-apps"] + (["sensitive"] if app in SENSITIVE else [])}
        for dept, (apps, _) in DEPARTMENTS.items()
        for app in apps
    ]
    out += [{"name": app, "roleAttributes": ["all-staff-apps", "common-apps"]} for app in COMMON]
    out += [
        {"name": "door-control", "roleAttributes": ["iot-apps"]},
        {"name": MISTAKES["service"], "roleAttributes": ["finance-apps", "legacy"]},
    ]
    return out


def _service_policies() -> list[dict]:
    out = [
        {
            "name": "staff-common",
            "type": "Dial",
            "identityRoles": ["#staff", "#contractors"],
            "serviceRoles": ["#all-staff-apps"],
        }
    ]
    for dept, (apps, _) in DEPARTMENTS.items():
        sensitive = any(app in SENSITIVE for app in apps)
        # finance trusts the attribute alone (AnyOf): that is how the contractor gets in
        roles = ["#finance"] if dept == "finance" else ["#staff", f"#{dept}"]
        out.append(
            {
                "name": f"{dept}-apps",
                "type": "Dial",
                "semantic": "AnyOf" if dept == "finance" else "AllOf",
                "identityRoles": roles,
                "serviceRoles": [f"#{dept}-apps"],
                **({"postureCheckRoles": ["#sensitive"]} if sensitive else {}),
            }
        )
        out.append(
            {
                "name": f"{dept}-hosts-bind",
                "type": "Bind",
                "identityRoles": [f"#{dept}-hosts"],
                "serviceRoles": [f"#{dept}-apps"],
            }
        )
    out += [
        {
            "name": "common-hosts-bind",
            "type": "Bind",
            "identityRoles": ["#common-hosts"],
            "serviceRoles": ["#common-apps"],
        },
        {
            "name": "contractors-engineering",
            "type": "Dial",
            "semantic": "AllOf",
            "identityRoles": ["#contractors", "#engineering"],
            "serviceRoles": ["@git", "@ci"],
        },
        {
            "name": "contractors-support",
            "type": "Dial",
            "semantic": "AllOf",
            "identityRoles": ["#contractors", "#support"],
            "serviceRoles": ["@helpdesk"],
        },
        {"name": "kiosks-helpdesk", "type": "Dial", "identityRoles": ["#kiosks"], "serviceRoles": ["@helpdesk"]},
        {"name": "badges-doors", "type": "Dial", "identityRoles": ["#iot"], "serviceRoles": ["#iot-apps"]},
        {
            "name": "door-control-bind",
            "type": "Bind",
            "identityRoles": ["@badge-reader-01"],
            "serviceRoles": ["#iot-apps"],
        },
        {
            "name": "managers-hris",
            "type": "Dial",
            "identityRoles": ["#managers"],
            "serviceRoles": ["@hris"],
            "postureCheckRoles": ["#sensitive"],
        },
        {
            "name": MISTAKES["policy"],
            "type": "Dial",
            "semantic": "AllOf",
            "identityRoles": ["#hr", "#offboarding"],
            "serviceRoles": ["#all-staff-apps"],
        },
    ]
    return out


def _routers() -> tuple[list[dict], list[dict], list[dict]]:
    routers = [{"name": f"er-{region}-{n}", "roleAttributes": [region, "public"]} for region in REGIONS for n in (1, 2)]
    routers += [
        {"name": "er-dc-1", "roleAttributes": ["datacenter"], "isTunnelerEnabled": True},
        {"name": "er-site-1", "roleAttributes": ["sites"]},
    ]
    # staff use their region's routers; no one wrote the apac policy
    erps = [
        {
            "name": f"staff-{region}",
            "semantic": "AllOf",
            "identityRoles": ["#staff", f"#{region}"],
            "edgeRouterRoles": [f"#{region}"],
        }
        for region in REGIONS
        if region != MISTAKES["region"]
    ]
    erps += [
        {"name": "contractors-public", "identityRoles": ["#contractors"], "edgeRouterRoles": ["#eu"]},
        {"name": "hosts-datacenter", "identityRoles": ["#hosts"], "edgeRouterRoles": ["#datacenter"]},
        {"name": "devices-sites", "identityRoles": ["#kiosks", "#iot"], "edgeRouterRoles": ["#sites"]},
    ]
    serps = [
        {
            "name": "apps-public",
            "serviceRoles": [f"#{d}-apps" for d in DEPARTMENTS if d != "finance"] + ["#all-staff-apps"],
            "edgeRouterRoles": ["#public"],
        },
        {"name": "finance-eu", "serviceRoles": ["@ledger", "@payroll"], "edgeRouterRoles": ["#eu"]},
        {"name": "apps-datacenter", "serviceRoles": ["#all"], "edgeRouterRoles": ["#datacenter"]},
        {"name": "sites", "serviceRoles": ["#iot-apps", "@helpdesk"], "edgeRouterRoles": ["#sites"]},
    ]
    return routers, erps, serps


def realistic(people: int = 120, seed: int = 7) -> dict:
    """A company network of ``people`` staff plus contractors and devices (see the module docstring)."""
    rng = random.Random(seed)
    identities = _people(rng, people) + _contractors(rng, max(2, people // 15)) + _devices(max(1, people // 40), 3)
    _mistakes(identities)
    routers, erps, serps = _routers()
    return {
        "postureChecks": [
            {"name": "corp-domain", "typeId": "DOMAIN", "domains": ["corp.example"], "roleAttributes": ["sensitive"]},
            {
                "name": "supported-os",
                "typeId": "OS",
                "roleAttributes": ["sensitive"],
                "operatingSystems": [
                    {"type": "Windows", "versions": [">=10.0.19045"]},
                    {"type": "macOS", "versions": [">=14.0.0"]},
                ],
            },
        ],
        "services": _services(),
        "edgeRouters": routers,
        "identities": identities,
        "servicePolicies": _service_policies(),
        "edgeRouterPolicies": erps,
        "serviceEdgeRouterPolicies": serps,
    }


__all__ = ["DEPARTMENTS", "MISTAKES", "realistic"]
