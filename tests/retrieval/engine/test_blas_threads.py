"""An engine sets numpy's BLAS to `blas_threads` for the process (one by default): a read's vector
products are a few hundred rows, and a BLAS pool of more threads spins against the request threads."""

from __future__ import annotations

from threadpoolctl import threadpool_info, threadpool_limits

from retrieval import MemoryEngine, RetrievalSettings


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_an_engine_runs_numpys_blas_on_the_threads_its_settings_name(tmp_path, fake_embedder):
    with threadpool_limits(limits=2, user_api="blas"):  # whatever the engine sets, put back afterwards
        two = _blas_threads()  # {2}, or {1} on a host of one CPU (OpenBLAS runs at most one per CPU)
        assert two <= {1, 2} and len(two) == 1
        with MemoryEngine(RetrievalSettings(data_dir=tmp_path / "one"), embedder=fake_embedder):
            assert _blas_threads() == {1}
        with MemoryEngine(RetrievalSettings(data_dir=tmp_path / "two", blas_threads=2), embedder=fake_embedder):
            assert _blas_threads() == two
