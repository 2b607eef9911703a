"""Which of post's parallel code pre does not run identically: the race check's trigger."""
from harnessgen.harness.parallel_code import functions, new_parallel_code, regions

PRE = """
inline void nested_hg_pre_0(hg_pre_state_t *__state, double *A, int j) {
    A[j] = A[j] + 1;
}
void __program_hg_pre_internal(hg_pre_state_t *__state, double *A, int N, int K) {
    for (k = 1; k < K; k = k + 1) {
        {
            #pragma omp parallel for
            for (auto j = 1; j < N; j += 1) {
                A[k * N + j] = A[(k - 1) * N + j - 1] + 1.0;
            }
        }
    }
    #pragma omp parallel for
    for (auto j = 0; j < N; j += 1)
        nested_hg_pre_0(__state, A, j);
}
"""


def _post(body: str) -> str:
    return PRE.replace("hg_pre", "hg_post").replace(
        "                A[k * N + j] = A[(k - 1) * N + j - 1] + 1.0;\n", body)


def test_each_threaded_construct_is_taken_with_the_statement_it_governs():
    found = regions(PRE)
    assert len(found) == 2
    assert found[0].count("{") == found[0].count("}") and "A[(k - 1) * N + j - 1]" in found[0]
    assert found[1].rstrip().endswith("nested_hg_pre_0(__state, A, j);")     # no braces: up to its ';'
    assert set(functions(PRE)) == {"nested_hg_pre_0", "__program_hg_pre_internal"}


def test_the_same_code_under_other_names_and_layout_is_not_new():
    reflowed = _post("                A[k * N + j]   =   A[(k - 1) * N + j - 1] + 1.0;\n")
    assert new_parallel_code(PRE, "hg_pre", reflowed, "hg_post") == []


def test_a_changed_body_under_the_same_directive_is_new():
    """A loop moved into the map keeps the one directive; only the region's body differs."""
    moved = _post("                for (k = 1; k < K; k = k + 1) { A[k * N + j] = A[(k - 1) * N + j - 1] + 1.0; }\n")
    directives = [line.strip() for line in moved.splitlines() if "#pragma" in line]
    assert directives == [line.strip() for line in PRE.splitlines() if "#pragma" in line]
    assert len(new_parallel_code(PRE, "hg_pre", moved, "hg_post")) == 1


def test_a_changed_function_called_from_a_region_makes_that_region_new():
    changed = PRE.replace("hg_pre", "hg_post").replace("A[j] = A[j] + 1;", "A[j] = A[j + 1] + 1;")
    [region] = new_parallel_code(PRE, "hg_pre", changed, "hg_post")
    assert "A[j + 1]" in region


def test_a_change_in_sequential_code_only_is_not_new_parallel_code():
    changed = PRE.replace("hg_pre", "hg_post").replace("k = k + 1", "k += 1")
    # the first region lies inside the changed loop but does not contain it
    assert new_parallel_code(PRE, "hg_pre", changed, "hg_post") == []
    simd_only = PRE.replace("hg_pre", "hg_post") + "\nvoid extra() {\n#pragma omp simd\nfor (;;) {}\n}\n"
    assert new_parallel_code(PRE, "hg_pre", simd_only, "hg_post") == []
