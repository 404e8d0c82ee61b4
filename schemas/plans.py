"""The plans catalogue (data) and the `GET /v1/plans` response models.

One source of truth for plan prices, credit allocations, limits and feature flags: the public route,
`socialpub workspaces set-plan` and the entitlement checks (`tools/context/plans.py`) all read `PLANS`.
Prices are integer US cents, so no float ever carries money.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.platforms import PLATFORMS

GIB = 1024 ** 3
SELF_HOSTED_PLAN_ID = "self_hosted"

# Names of the countable limits. `social_accounts` counts across the workspace; the others within a brand
# (spec, Limits: "social accounts count across the workspace; network and media caps apply within a brand").
LIMIT_NAMES: tuple[str, ...] = ("social_accounts", "networks_per_brand", "media_items_per_brand",
                                "media_storage_bytes_per_brand")
BRAND_LIMITS: tuple[str, ...] = ("networks_per_brand", "media_items_per_brand", "media_storage_bytes_per_brand")

FEATURE_NAMES: tuple[str, ...] = ("autopilot",)

ALL_NETWORKS = len(PLATFORMS)  # a plan that allows every supported network on one brand


@dataclass(frozen=True)
class PlanPrice:
    billing_period: Literal["month", "year"]
    amount_cents: int


@dataclass(frozen=True)
class Plan:
    id: str
    name: str
    description: str
    prices: tuple[PlanPrice, ...]
    monthly_credits: int
    limits: dict[str, int | None]  # None: no limit
    features: dict[str, bool]
    sold: bool = True  # offered as an upgrade; the self-hosted plan is the operator's own, never sold

    @property
    def paid(self) -> bool:
        return any(p.amount_cents > 0 for p in self.prices)


def _limits(accounts: int, networks: int, media_items: int, media_gib: int) -> dict[str, int | None]:
    return {"social_accounts": accounts, "networks_per_brand": networks, "media_items_per_brand": media_items,
            "media_storage_bytes_per_brand": media_gib * GIB}


PLANS: tuple[Plan, ...] = (
    Plan("free", "Free", "Try socialpub with a few accounts; no Autopilot.",
         (PlanPrice("month", 0),), monthly_credits=20,
         limits=_limits(3, 3, 50, 1), features={"autopilot": False}),
    Plan("creator", "Creator", "One creator or small brand across the main networks, with Autopilot.",
         (PlanPrice("month", 1900), PlanPrice("year", 19000)), monthly_credits=200,
         limits=_limits(10, 6, 1000, 25), features={"autopilot": True}),
    Plan("pro", "Pro", "Several brands on every supported network.",
         (PlanPrice("month", 4900), PlanPrice("year", 49000)), monthly_credits=1000,
         limits=_limits(30, ALL_NETWORKS, 5000, 100), features={"autopilot": True}),
    Plan("agency", "Agency", "Many brands and accounts for agencies.",
         (PlanPrice("month", 14900), PlanPrice("year", 149000)), monthly_credits=5000,
         limits=_limits(150, ALL_NETWORKS, 25000, 500), features={"autopilot": True}),
    # `socialpub init` puts the first workspace here: the operator runs the server, so nothing is metered.
    Plan(SELF_HOSTED_PLAN_ID, "Self-hosted", "Your own server: no limits and every feature. Not sold; "
         "`socialpub init` gives it to the first workspace unless the operator picks a plan.",
         (), monthly_credits=0, limits=dict.fromkeys(LIMIT_NAMES), features={"autopilot": True}, sold=False),
)

BY_ID: dict[str, Plan] = {p.id: p for p in PLANS}
PLAN_IDS: tuple[str, ...] = tuple(BY_ID)
DEFAULT_PLAN_ID = "free"  # new workspaces; also the column default of `workspaces.plan_id`


def get_plan(plan_id: str) -> Plan:
    """The plan of a workspace; an unknown stored ID (a plan retired from the catalogue) is treated as free."""
    return BY_ID.get(plan_id, BY_ID[DEFAULT_PLAN_ID])


def plans_with(feature: str) -> list[str]:
    """Sold plans that include `feature` (what an upgrade hint may name)."""
    return [p.id for p in PLANS if p.sold and p.features.get(feature)]


def upgrade_choices(limit: str, at_least: int) -> list[str]:
    """Sold plans whose `limit` allows `at_least`, cheapest first (the catalogue is ordered by price)."""
    return [p.id for p in PLANS if p.sold and ((n := p.limits[limit]) is None or n >= at_least)]


# -- response models ---------------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PriceOut(_Out):
    billing_period: Literal["month", "year"] = Field(description="How often the price is charged.")
    amount_cents: int = Field(description="Price per billing period in US cents (1900 = 19.00 USD).")
    currency: Literal["USD"]


class CreditsOut(_Out):
    monthly_allocation: int = Field(description="Credits granted at the start of every month of the plan.")


class LimitsOut(_Out):
    """null: no limit (the self-hosted plan)."""

    social_accounts: int | None = Field(description="Connected social accounts across the whole workspace; "
                                                    "null: no limit.")
    networks_per_brand: int | None = Field(description="Distinct networks (platforms) connected to one brand; "
                                                       "null: no limit.")
    media_items_per_brand: int | None = Field(description="Media items stored in one brand (failed items not "
                                                          "counted); null: no limit.")
    media_storage_bytes_per_brand: int | None = Field(description="Bytes of media stored in one brand; null: no "
                                                                  "limit.")


class FeaturesOut(_Out):
    autopilot: bool = Field(description="Autopilot approve/regenerate writes (paid plans).")


class PlanOut(_Out):
    id: str
    name: str
    description: str
    is_default: bool = Field(description="True for the plan new workspaces start on.")
    paid: bool
    sold: bool = Field(description="Offered as an upgrade. False for the self-hosted plan (the operator's own "
                                   "server: no prices, no limits).")
    prices: list[PriceOut]
    credits: CreditsOut
    limits: LimitsOut
    features: FeaturesOut


class PlansCatalogue(_Out):
    plans: list[PlanOut]
    currency: Literal["USD"]
    default_plan_id: str
    upgrade_url: str = Field(description="Where a workspace owner changes plan.")


def plan_out(plan: Plan) -> dict:
    return {
        "id": plan.id, "name": plan.name, "description": plan.description, "is_default": plan.id == DEFAULT_PLAN_ID,
        "paid": plan.paid, "sold": plan.sold,
        "prices": [{"billing_period": p.billing_period, "amount_cents": p.amount_cents, "currency": "USD"}
                   for p in plan.prices],
        "credits": {"monthly_allocation": plan.monthly_credits},
        "limits": dict(plan.limits), "features": dict(plan.features),
    }
