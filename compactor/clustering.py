"""Vector clustering of episodic memories: complete-linkage agglomerative clustering on cosine distance.

Chosen by measurement (docs/reflect.md, `xmemo bench-reflect --compare-clustering`): on LoCoMo turns,
single-link threshold graphs and average linkage chain whole conversations into one cluster, and
HDBSCAN leaves few, giant clusters; complete linkage keeps clusters tight (every two members at least
1 - max_distance similar) and recovers the constructed topics of tests/data/topic_clusters.json
exactly. Complete linkage is also reducible, so removing whole clusters leaves the others unchanged:
running reflect again over what it left finds no new cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["cluster_vectors", "unit_rows"]


def cluster_vectors(
    vectors: np.ndarray, max_distance: float, min_size: int, apart: np.ndarray | None = None
) -> list[list[int]]:
    """Row indices of `vectors` grouped into clusters of at least `min_size`, each sorted.

    `apart` (boolean, rows x rows) marks pairs that may never share a cluster, whatever their vectors
    say: their distance is set to the largest there is, and complete linkage then never joins them.
    Clusters come back ordered by their first row, so that equal inputs give equal outputs.
    """
    count = len(vectors)
    if count < min_size or count < 2:
        return []
    unit = unit_rows(vectors)
    distances = np.clip(1.0 - unit @ unit.T, 0.0, 2.0)
    if apart is not None:
        distances = np.where(apart, 2.0, distances)
    np.fill_diagonal(distances, 0.0)
    labels = _complete_linkage(distances, max_distance)
    groups: dict[int, list[int]] = {}
    for row, label in enumerate(labels):
        groups.setdefault(int(label), []).append(row)
    return sorted((rows for rows in groups.values() if len(rows) >= min_size), key=lambda rows: rows[0])


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float64); a zero row stays zero."""
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0.0, 1.0, norms)


def _complete_linkage(distances: np.ndarray, max_distance: float) -> Sequence[int]:
    from sklearn.cluster import AgglomerativeClustering

    model = AgglomerativeClustering(
        n_clusters=None, metric="precomputed", linkage="complete", distance_threshold=max_distance
    )
    return model.fit_predict(distances)  # type: ignore[no-any-return]
