"""The base of every dpexp pydantic model: a field is declared on one line and its description is the string
literal on the line below it (an attribute docstring), e.g. ``omega_x: float = Field(1.0, gt=0)`` followed by a
line holding the text of the description in triple quotes.

pydantic reads such attribute docstrings into ``FieldInfo.description`` (``use_attribute_docstrings``); a short
description may stay in ``Field(description=...)`` on the declaration's own line.  A docstring wrapped over several
lines reads back as one line (``dpexp algorithms`` listings and the figures' axis labels print it).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Documented(BaseModel):
    """A model whose fields' attribute docstrings are their descriptions (module docstring)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        wrapped = [f for f in cls.model_fields.values() if f.description and "\n" in f.description]
        for field in wrapped:
            # the docstring's line breaks are the source's wrapping, not part of the text
            field.description = " ".join(field.description.split("\n"))
        if wrapped:
            # the JSON schema reads the descriptions from the core schema, built before this hook; a model with
            # forward references not yet defined is built later, from the corrected fields
            cls.model_rebuild(force=True, raise_errors=False)
