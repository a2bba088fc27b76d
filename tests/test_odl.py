"""The embedded OpenDaylight's pure parts (fixtures/devices/odl.py): its configuration pinned to loopback, the
build cache and its stamp, what it lacks (no process, no socket, no Maven)."""

from itertools import count

import pytest

from fixtures.devices import odl
from fixtures.devices.base import Can, Needs, lacking
from fixtures.devices.odl import OdlController, Ports

JETTY = """<Configure id="Server" class="org.eclipse.jetty.server.Server">
    <Call name="addConnector">
        <Arg>
            <New class="org.eclipse.jetty.server.ServerConnector">
                <Set name="host">
                    <Property name="jetty.host"/>
                </Set>
                <Set name="port">
                    <Property name="jetty.port" default="8181"/>
                </Set>
            </New>
        </Arg>
    </Call>
</Configure>
"""

AKKA = """odl-cluster-data {
  akka {
    remote {
      artery {
        enabled = off
        canonical.hostname = "0.0.0.0"
        canonical.port = 2550
      }
      netty.tcp {
        hostname = "0.0.0.0"
        port = 2550
      }
    }
    cluster {
      seed-nodes = ["akka.tcp://opendaylight-cluster-data@0.0.0.0:2550"]
    }
  }
}
"""

OPENFLOW = """<switch-connection-config xmlns="urn:opendaylight:params:xml:ns:yang:openflow:switch:connection:config">
  <instance-name>openflow-switch-connection-provider-default-impl</instance-name>
  <port>6653</port>
  <transport-protocol>TCP</transport-protocol>
</switch-connection-config>
"""


def test_properties_are_set_where_they_are_commented_out_or_appended():
    text = "sshPort = 8101\n#sshHost = 0.0.0.0\nother=1\n"
    out = odl.set_properties(text, {"sshHost": "127.0.0.1", "sshPort": 2, "new.key": "x"})
    assert out.splitlines() == ["sshPort = 2", "sshHost = 127.0.0.1", "other=1", "new.key = x"]


def test_the_openflow_connection_gets_an_address_and_its_port():
    out = odl.set_xml_leaf(odl.set_xml_leaf(OPENFLOW, "port", "20001"), "address", "127.0.0.1")
    assert "<port>20001</port>" in out and "<address>127.0.0.1</address>" in out and "6653" not in out
    assert out.rstrip().endswith("</switch-connection-config>")


def test_jettys_own_connector_is_pinned_to_loopback():
    out = odl.pin_jetty(JETTY, 20002)
    assert '<Set name="host">127.0.0.1</Set>' in out and '<Set name="port">20002</Set>' in out
    assert "8181" not in out and "jetty.host" not in out


def test_akka_remoting_and_its_seed_are_pinned_to_loopback():
    out = odl.pin_akka(AKKA, 20003)
    assert "0.0.0.0" not in out and "2550" not in out
    assert 'canonical.hostname = "127.0.0.1"' in out and "port = 20003" in out
    assert "opendaylight-cluster-data@127.0.0.1:20003" in out


def test_each_listener_gets_a_port_of_its_own():
    taken = count(30000)
    p = Ports(6653, take=lambda: next(taken))
    ports = p.as_dict()
    assert ports["openflow"] == 6653 and len(set(ports.values())) == len(Ports.NAMES)


def seeded_instance(tmp_path):
    """An instance directory with the configuration files a boot would install, as make_instance and seed leave
    them."""
    inst = tmp_path / "inst"
    (inst / "etc").mkdir(parents=True)
    (inst / "etc" / "jetty.xml").write_text(JETTY)
    (inst / "etc" / "org.apache.karaf.shell.cfg").write_text("sshPort = 8101\nsshHost = 0.0.0.0\n")
    cfg = inst / "etc" / "opendaylight" / "datastore" / "initial" / "config"
    cfg.mkdir(parents=True)
    for name in ("default-openflow-connection-config.xml", "legacy-openflow-connection-config.xml"):
        (cfg / name).write_text(OPENFLOW)
    (inst / "configuration" / "initial").mkdir(parents=True)
    (inst / "configuration" / "initial" / "akka.conf").write_text(AKKA)
    return inst


def test_every_configured_listener_is_on_loopback(tmp_path):
    inst = seeded_instance(tmp_path)
    taken = count(31000)
    p = Ports(6653, take=lambda: next(taken))
    odl.pin_to_loopback(inst, p, tmp_path / "karaf.log")
    etc = inst / "etc"
    text = "\n".join(f.read_text() for f in etc.rglob("*") if f.is_file())
    text += (inst / "configuration" / "initial" / "akka.conf").read_text()
    assert "0.0.0.0" not in text
    assert "sshHost = 127.0.0.1" in text and f"sshPort = {p.ssh}" in text
    assert f"rmiRegistryPort = {p.rmi_registry}" in text and "rmiServerHost = 127.0.0.1" in text
    # the JMX connector's RMI server on the registry's port (held on 127.0.0.1): it cannot listen anywhere else
    assert f"rmiServerPort = {p.rmi_registry}" in text
    assert "org.ops4j.pax.web.listening.addresses = 127.0.0.1" in text and f"http.port = {p.restconf}" in text
    assert "websocket-address = 127.0.0.1" in text and f"websocket-port = {p.websocket}" in text
    legacy = (etc / "opendaylight/datastore/initial/config/legacy-openflow-connection-config.xml").read_text()
    assert f"<port>{p.openflow_legacy}</port>" in legacy and "<address>127.0.0.1</address>" in legacy
    assert str(tmp_path / "karaf.log") in (etc / "org.ops4j.pax.logging.cfg").read_text()


def test_a_cached_assembly_of_the_same_pom_is_not_built_again(tmp_path, monkeypatch):
    from fixtures.devices import odl_build
    monkeypatch.setenv("BMWG_ODL_CACHE", str(tmp_path / "cache"))
    pom = tmp_path / "pom.xml"
    pom.write_text("<project/>")
    (tmp_path / "cache" / "assembly" / "bin").mkdir(parents=True)
    (tmp_path / "cache" / "assembly" / "bin" / "karaf").write_text("")
    assert not odl_build.built(pom)                              # no stamp: built by someone else, or half
    (tmp_path / "cache" / "assembly.stamp").write_text(odl_build.pom_digest(pom) + "\n")
    assert odl_build.built(pom)
    monkeypatch.setattr(odl_build, "maven", lambda: pytest.fail("Maven was run for a cached assembly"))
    assert odl_build.build(tmp_path / "build.log", pom)["built"] is False
    pom.write_text("<project><!-- changed --></project>")       # another POM: built again
    assert not odl_build.built(pom)
    monkeypatch.setattr(odl_build, "maven", lambda: None)
    with pytest.raises(odl_build.BuildError, match="mvn is not on PATH"):
        odl_build.build(tmp_path / "build.log", pom)
    monkeypatch.setattr(odl_build, "POM", pom)
    with pytest.raises(odl.ControllerError, match="mvn is not on PATH"):      # the device says it as its own error
        odl.build(tmp_path / "build.log")
    assert odl_build.main([]) == 2                                # the command line: no Maven, nothing built


def test_the_build_module_needs_only_the_standard_library():
    """``.ci/run`` runs ``python3 -m fixtures.devices.odl_build`` before the project is installed: the module and the
    packages it sits in import nothing outside Python's standard library."""
    import ast
    import importlib.util
    import sysconfig
    from pathlib import Path

    import fixtures
    import fixtures.devices
    from fixtures.devices import odl_build
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()

    def standard(name: str) -> bool:
        spec = importlib.util.find_spec(name)
        origin = getattr(spec, "origin", None)
        if spec is None or origin in ("built-in", "frozen"):
            return spec is not None
        path = Path(origin).resolve()
        return stdlib in path.parents and not {"site-packages", "dist-packages"} & set(path.parts)

    assert not standard("psutil") and standard("fcntl") and standard("hashlib")
    for module in (fixtures, fixtures.devices, odl_build):
        tree = ast.parse(Path(module.__file__).read_text())
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
        outside = sorted(n for n in names - {"__future__"} if not standard(n))
        assert not outside, f"{module.__name__} imports {outside}"


def test_what_it_lacks_is_said(tmp_path, monkeypatch):
    monkeypatch.setenv("BMWG_ODL_JAVA_HOME", str(tmp_path / "nojava"))
    assert "Java 11 runtime" in odl.missing()
    ctl = OdlController(tmp_path)
    assert ctl.unavailable() == odl.missing() and not ctl.restarted_between_trials
    reason, _ = lacking(ctl, Needs.of(Can.OPENFLOW, Can.REACTIVE_PATHS))
    assert "no learning-switch application" in reason
    java = tmp_path / "java" / "bin"
    java.mkdir(parents=True)
    (java / "java").write_text("")
    monkeypatch.setenv("BMWG_ODL_JAVA_HOME", str(tmp_path / "java"))
    monkeypatch.setenv("BMWG_ODL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(odl, "maven", lambda: None)
    assert "built with Maven on first use" in odl.missing()


class Alive:
    alive = True

    def end(self):
        self.alive = False


def test_a_controller_that_stopped_answering_is_started_anew_before_the_next_trial(tmp_path, monkeypatch):
    # Seen on 2026-11-26: after a capacity trial's 1,200 sessions OpenDaylight answered no handshake within 10 s,
    # and every later trial of the run failed on it.  Kept across trials, it is now restarted when it does not answer.
    ctl = OdlController(tmp_path)
    calls = []
    monkeypatch.setattr(ctl, "stop", lambda: calls.append("stop"))
    monkeypatch.setattr(ctl, "start", lambda: calls.append("start"))
    monkeypatch.setattr(ctl, "clear_flows", lambda: calls.append("clear"))
    ctl.proc = Alive()

    def hung(timeout=None):
        raise odl.ControllerError("no HELLO from controller from 127.0.0.1:1 within 10 s")
    monkeypatch.setattr(ctl, "check_alive", hung)
    ctl.prepare_trial()
    assert calls == ["stop", "start"] and "started anew" in (tmp_path / "odl.log").read_text()
    calls.clear()
    monkeypatch.setattr(ctl, "check_alive", lambda timeout=None: 0.01)
    ctl.prepare_trial()
    assert calls == ["clear"]                      # answering: kept, its configured flows deleted
    calls.clear()
    ctl.proc = None
    ctl.prepare_trial()
    assert calls == ["stop", "start"]              # gone: started anew


def test_instances_of_runs_that_are_gone_are_removed(tmp_path):
    root = tmp_path / "instances"
    for name, owner in (("run-dead", "101"), ("run-live", "202"), ("run-unowned", None)):
        (root / name).mkdir(parents=True)
        if owner:
            (root / name / "owner").write_text(owner)
    gone = odl.prune_instances(root, alive=lambda pid: pid == 202)
    assert [p.name for p in gone] == ["run-dead"]
    assert sorted(p.name for p in root.iterdir()) == ["run-live", "run-unowned"]
