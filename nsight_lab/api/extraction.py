"""``nsight.extraction``: nsight-python's reading of its ncu report into a raw frame.

nsight-lab reads its ncu reports itself (:mod:`nsight_lab.backends.ncu.report`) into
per-run records; nsight-python's extraction functions, which read the report of its
own in-process path, are not served. The results are
``ProfileResults.to_dataframe()``; a kept ``.ncu-rep`` (``output_prefix``) opens with
``ncu_report``.
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute, unserved

__all__: list[str] = []

_MODULE = "nsight.extraction"
_INSTEAD = (
    "read the results with ProfileResults.to_dataframe(), or the .ncu-rep that "
    "output_prefix keeps with ncu_report"
)
extract_ncu_action_data = unserved(_MODULE, "extract_ncu_action_data", _INSTEAD)
extract_data_from_report = unserved(_MODULE, "extract_data_from_report", _INSTEAD)
extract_df_from_data = unserved(_MODULE, "extract_df_from_data", _INSTEAD)
extract_df_from_report = unserved(_MODULE, "extract_df_from_report", _INSTEAD)


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
