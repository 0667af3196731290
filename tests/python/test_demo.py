"""The demo (README's main command) runs every section on built-in defaults and prints its tables."""
import kubetune.demo


def test_demo_quick_prints_every_section(capsys):
    assert kubetune.demo.main(["--quick", "--only", "search,multifidelity,autoscale,sched"]) == 0
    out = capsys.readouterr().out
    for title in ("Search:", "Multi-fidelity", "Autoscaling", "GPU-sharing allocator"):
        assert title in out
    for searcher in ("Random", "Sobol", "TPE", "GP"):
        assert searcher in out
    for method in ("Hyperband", "ASHA", "BOHB"):
        assert method in out
