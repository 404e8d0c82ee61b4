"""Labels, snippets and ideas: request bodies and response shapes (every limit of the spec's Limits table)."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from schemas.content import LABEL_IDS_MAX, BrandId, StrictBody, id_set, no_default, trimmed
from schemas.paging import OlderLimit, Page, SortDir
from schemas.requests import PathParam, QueryParam, RequestModel
from schemas.validators import unique_items

LABEL_NAME_MAX = 100
LABEL_COLOR_MAX = 20
LABELS_PER_BRAND_MAX = 500  # our bound, so the discovery list ("every label") stays bounded
SNIPPET_NAME_MAX = 200
SNIPPET_TEXT_MAX = 10_000
IDEA_NAME_MAX = 500
IDEA_DESCRIPTION_MAX = 10_000
IDEA_LABELS_MAX = 50
IdeaStatus = Literal["new", "in_progress", "used"]
IDEA_STATUSES: tuple[str, ...] = get_args(IdeaStatus)

Color = Annotated[str, Field(max_length=LABEL_COLOR_MAX, pattern=r"^#(?:[0-9A-Fa-f]{3,4}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$",
                             description="Hex colour, e.g. #C8A27A.")]
LabelId = Annotated[str, PathParam("Label ID, from list_labels.")]
SnippetId = Annotated[str, PathParam("Snippet ID, from list_snippets.")]
IdeaId = Annotated[str, PathParam("Idea ID, from list_ideas.")]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Deleted(_Out):
    id: str
    outcome: Literal["deleted"]


# -- labels ---------------------------------------------------------------------------------------------------

class LabelRef(_Out):
    """A label as brand discovery lists it."""

    id: str
    name: str
    color: str | None


class LabelList(_Out):
    items: list[LabelRef] = Field(description="Every label of the brand, sorted by name.")


class Label(_Out):
    id: str
    name: str
    color: str | None
    created_at: str
    updated_at: str


class CreateLabelRequest(StrictBody):
    brand_id: BrandId
    name: trimmed(LABEL_NAME_MAX, "Label name, unique in the brand (ignoring case).")  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    color: Color | None = None


class UpdateLabelRequest(StrictBody):
    brand_id: BrandId
    label_id: LabelId
    name: trimmed(LABEL_NAME_MAX, "New name.") = no_default()  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    color: Color | None = no_default("New colour; null clears it.")


class LabelPath(StrictBody):
    brand_id: BrandId
    label_id: LabelId


# -- snippets -------------------------------------------------------------------------------------------------

SnippetName = Annotated[str, Field(max_length=SNIPPET_NAME_MAX)]
SnippetText = Annotated[str, Field(max_length=SNIPPET_TEXT_MAX)]
SnippetLabels = id_set(LABEL_IDS_MAX, "Labels of this brand: unique, ascending, at most 50.")


class Snippet(_Out):
    id: str
    name: str | None
    text: str | None
    label_ids: list[str]
    created_at: str
    updated_at: str


class CreateSnippetRequest(StrictBody):
    brand_id: BrandId
    name: SnippetName | None = None
    text: SnippetText | None = None
    label_ids: SnippetLabels = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)


class UpdateSnippetRequest(StrictBody):
    brand_id: BrandId
    snippet_id: SnippetId
    name: SnippetName | None = no_default("null clears it.")
    text: SnippetText | None = no_default("null clears it.")
    label_ids: SnippetLabels = no_default()  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)


class SnippetPath(StrictBody):
    brand_id: BrandId
    snippet_id: SnippetId


# -- ideas ----------------------------------------------------------------------------------------------------

IdeaName = Annotated[str, Field(max_length=IDEA_NAME_MAX)]
IdeaDescription = Annotated[str, Field(max_length=IDEA_DESCRIPTION_MAX)]
IdeaType = Annotated[str, Field(min_length=1, max_length=50, description="e.g. post, reel, story.")]


IdeaLabels = Annotated[list[Annotated[str, Field(min_length=1, max_length=LABEL_NAME_MAX)]],
                       Field(max_length=IDEA_LABELS_MAX, description="Free-form labels (names), unique, at most 50."),
                       AfterValidator(unique_items)]


class Idea(_Out):
    id: str
    name: str | None
    description: str | None
    type: str | None
    status: str
    labels: list[str]
    last_used_at: str | None
    created_at: str
    updated_at: str


class CreateIdeaRequest(StrictBody):
    brand_id: BrandId
    name: IdeaName | None = None
    description: IdeaDescription | None = None
    type: IdeaType | None = None
    status: IdeaStatus = Field("new", description="new (default), in_progress or used.")
    labels: IdeaLabels = []


class UpdateIdeaRequest(StrictBody):
    brand_id: BrandId
    idea_id: IdeaId
    name: IdeaName | None = no_default("null clears it.")
    description: IdeaDescription | None = no_default("null clears it.")
    type: IdeaType | None = no_default("null clears it.")
    status: IdeaStatus = no_default("Setting used records last_used_at.")
    labels: IdeaLabels = no_default()


class IdeaPath(StrictBody):
    brand_id: BrandId
    idea_id: IdeaId


# -- request models ------------------------------------------------------------------------------------------

class ListLabelsRequest(RequestModel):
    brand_id: BrandId


class ListLabelsOlderRequest(RequestModel):
    brand_id: BrandId
    page: Page = 1
    limit: OlderLimit = 50


class ListSnippetsRequest(RequestModel):
    brand_id: BrandId
    page: Page = 1
    limit: OlderLimit = 50


class ListIdeasRequest(RequestModel):
    brand_id: BrandId
    page: Page = 1
    limit: OlderLimit = 50
    sort_by: Literal["created_at", "updated_at", "last_used_at"] = QueryParam(
        "created_at", "Sort key; ideas never used sort last either way.")
    sort_dir: SortDir = "desc"
