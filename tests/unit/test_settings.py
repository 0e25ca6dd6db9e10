"""Settings: where values come from, in which order, and how bad values are refused."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from blazar_lite import settings as settings_module
from blazar_lite.cli import main
from blazar_lite.settings import OPTIONS, Settings, SettingsError, config_sample, load_settings

SAMPLE = Path(__file__).resolve().parents[2] / "etc" / "blazar-lite.conf.sample"


@pytest.fixture(autouse=True)
def no_system_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A machine with /etc/blazar-lite/blazar-lite.conf must not change what these tests see.
    monkeypatch.setattr(settings_module, "DEFAULT_CONFIG_FILE", tmp_path / "absent.conf")


def write_ini(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "blazar-lite.conf"
    path.write_text(text)
    return path


def test_etc_sample_is_the_output_of_config_sample() -> None:
    assert SAMPLE.read_text() == config_sample(), (
        "etc/blazar-lite.conf.sample is stale: regenerate it with "
        "`blazar-lite config-sample > etc/blazar-lite.conf.sample`")


def test_sample_file_loads_to_the_defaults(tmp_path: Path) -> None:
    from_sample = load_settings(SAMPLE, environ={}, data_dir=str(tmp_path))
    plain = load_settings(environ={}, data_dir=str(tmp_path))
    assert dataclasses.replace(from_sample, config_file=None) == plain


def test_sample_names_every_option_and_its_environment_variable() -> None:
    sample = config_sample()
    for option in OPTIONS:
        assert f"#{option.key} =" in sample
        assert option.env in sample


def test_settings_dataclass_defaults_match_option_defaults() -> None:
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    for option in OPTIONS:
        assert option.attr in fields, f"Settings has no field for [{option.section}] {option.key}"
        if option.default is not None:
            assert fields[option.attr].default == option.default, option.attr
    # Options whose default is None are either truly optional or derived when the object is built.
    built = Settings()
    for option in OPTIONS:
        if option.default is not None:
            assert getattr(built, option.attr) == option.default, option.attr
    assert built.data_dir and built.database_url


def test_every_setting_field_is_described_by_an_option() -> None:
    described = {o.attr for o in OPTIONS} | {"keystone_authtoken", "config_file"}
    assert {f.name for f in dataclasses.fields(Settings)} == described


def test_default_database_is_a_sqlite_file_in_the_data_dir(tmp_path: Path) -> None:
    loaded = load_settings(environ={}, data_dir=str(tmp_path))
    assert loaded.database_url == f"sqlite:///{tmp_path}/blazar-lite.db"
    assert loaded.is_sqlite


def test_default_data_dir_follows_xdg_data_home_of_the_given_environment(tmp_path: Path) -> None:
    loaded = load_settings(environ={"XDG_DATA_HOME": str(tmp_path)})
    assert loaded.data_dir == os.path.join(str(tmp_path), "blazar-lite")
    assert loaded.database_url == f"sqlite:///{tmp_path}/blazar-lite/blazar-lite.db"


def test_default_data_dir_is_under_local_share_without_xdg_data_home() -> None:
    loaded = load_settings(environ={})
    assert loaded.data_dir == os.path.join(os.path.expanduser("~"), ".local", "share", "blazar-lite")


def test_data_dir_expands_the_home_directory(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[DEFAULT]\ndata_dir = ~/somewhere\n")
    loaded = load_settings(ini, environ={})
    assert loaded.data_dir == os.path.join(os.path.expanduser("~"), "somewhere")


def test_explicit_database_url_is_kept(tmp_path: Path) -> None:
    loaded = load_settings(environ={}, data_dir=str(tmp_path), database_url="postgresql+psycopg://u@h/db")
    assert loaded.database_url == "postgresql+psycopg://u@h/db"
    assert not loaded.is_sqlite


def test_ini_file_beats_defaults(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[api]\nport = 2000\n[scheduler]\nenabled = false\n")
    loaded = load_settings(ini, environ={})
    assert loaded.api_port == 2000
    assert loaded.scheduler_enabled is False
    assert loaded.api_host == "127.0.0.1"
    assert loaded.config_file == str(ini)


def test_environment_beats_ini_file(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[api]\nport = 2000\nhost = 0.0.0.0\n")
    loaded = load_settings(ini, environ={"BLAZAR_LITE_API_PORT": "3000"})
    assert loaded.api_port == 3000
    assert loaded.api_host == "0.0.0.0"


def test_overrides_beat_environment(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[api]\nport = 2000\n")
    loaded = load_settings(ini, environ={"BLAZAR_LITE_API_PORT": "3000"}, api_port=4000)
    assert loaded.api_port == 4000


def test_override_of_none_means_not_given() -> None:
    loaded = load_settings(environ={"BLAZAR_LITE_API_PORT": "3000"}, api_port=None)
    assert loaded.api_port == 3000


def test_default_section_options_use_the_short_environment_name(tmp_path: Path) -> None:
    loaded = load_settings(environ={"BLAZAR_LITE_DATA_DIR": str(tmp_path)})
    assert loaded.data_dir == str(tmp_path)


def test_config_file_is_named_by_the_environment(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[api]\nworkers = 3\n")
    loaded = load_settings(environ={"BLAZAR_LITE_CONFIG": str(ini)})
    assert loaded.api_workers == 3


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(tmp_path / "nope.conf", environ={})


def test_config_file_that_is_not_ini_is_an_error(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "port = 1\n")
    with pytest.raises(SettingsError, match="not a valid ini file"):
        load_settings(ini, environ={})


@pytest.mark.parametrize("raw, expected", [("true", True), ("Yes", True), ("on", True), ("1", True),
                                           ("false", False), ("NO", False), ("off", False), ("0", False)])
def test_booleans_accept_the_usual_spellings(raw: str, expected: bool) -> None:
    loaded = load_settings(environ={"BLAZAR_LITE_SCHEDULER_ENABLED": raw})
    assert loaded.scheduler_enabled is expected


def test_bad_integer_in_ini_names_the_option(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[api]\nport = eighty\n")
    with pytest.raises(SettingsError, match=r"\[api\] port = 'eighty' is not an integer"):
        load_settings(ini, environ={})


def test_bad_integer_in_environment_names_the_variable_and_the_option() -> None:
    with pytest.raises(SettingsError, match=r"BLAZAR_LITE_API_WORKERS \(\[api\] workers\) = 'many'"):
        load_settings(environ={"BLAZAR_LITE_API_WORKERS": "many"})


def test_bad_boolean_names_the_option(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[scheduler]\nenabled = perhaps\n")
    with pytest.raises(SettingsError, match=r"\[scheduler\] enabled = 'perhaps' is not a boolean"):
        load_settings(ini, environ={})


def test_override_of_the_wrong_type_names_the_option() -> None:
    with pytest.raises(SettingsError, match=r"\[api\] port = '80' is not an integer"):
        load_settings(environ={}, api_port="80")


def test_boolean_is_not_taken_for_an_integer() -> None:
    with pytest.raises(SettingsError, match=r"\[api\] workers = True is not an integer"):
        Settings(api_workers=True)


def test_unknown_option_in_ini_is_an_error(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[api]\ncolour = blue\n")
    with pytest.raises(SettingsError, match=r"unknown option \[api\] colour"):
        load_settings(ini, environ={})


def test_unknown_option_in_default_section_is_an_error(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[DEFAULT]\ndebug = true\n")
    with pytest.raises(SettingsError, match=r"unknown option \[DEFAULT\] debug"):
        load_settings(ini, environ={})


def test_unknown_section_in_ini_is_an_error(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[databse]\n")
    with pytest.raises(SettingsError, match=r"unknown section \[databse\]"):
        load_settings(ini, environ={})


def test_unknown_override_is_an_error() -> None:
    with pytest.raises(SettingsError, match="unknown setting api_colour"):
        load_settings(environ={}, api_colour="blue")


def test_auth_strategy_must_be_one_of_the_choices() -> None:
    with pytest.raises(SettingsError, match=r"\[auth\] strategy = 'ldap' is not one of noauth, keystone"):
        load_settings(environ={"BLAZAR_LITE_AUTH_STRATEGY": "ldap"})


def test_log_level_is_case_insensitive_but_must_be_a_known_level() -> None:
    assert load_settings(environ={"BLAZAR_LITE_LOGGING_LEVEL": "debug"}).logging_level == "DEBUG"
    with pytest.raises(SettingsError, match=r"\[logging\] level = 'LOUD' is not one of"):
        load_settings(environ={"BLAZAR_LITE_LOGGING_LEVEL": "loud"})


@pytest.mark.parametrize("attr, value", [("api_port", 0), ("api_port", 65536), ("api_workers", 0),
                                         ("api_max_body_bytes", 0), ("scheduler_interval", 0)])
def test_numbers_out_of_range_are_refused(attr: str, value: int) -> None:
    with pytest.raises(SettingsError, match="too (small|large)"):
        load_settings(environ={}, **{attr: value})


def test_keystone_authtoken_section_is_passed_through(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[auth]\nstrategy = keystone\n[keystone_authtoken]\n"
                              "www_authenticate_uri = http://keystone.example.org:5000/v3\nauth_type = password\n")
    loaded = load_settings(ini, environ={})
    assert loaded.auth_strategy == "keystone"
    assert dict(loaded.keystone_authtoken) == {"www_authenticate_uri": "http://keystone.example.org:5000/v3",
                                               "auth_type": "password"}


def test_empty_value_in_ini_means_the_default(tmp_path: Path) -> None:
    ini = write_ini(tmp_path, "[api]\nhost =\n[auth]\npolicy_file =\n")
    loaded = load_settings(ini, environ={})
    assert loaded.api_host == "127.0.0.1"
    assert loaded.auth_policy_file is None


def test_replace_moves_a_derived_database_url_with_the_data_dir(tmp_path: Path) -> None:
    moved = load_settings(environ={}, data_dir=str(tmp_path / "a")).replace(data_dir=str(tmp_path / "b"))
    assert moved.database_url == f"sqlite:///{tmp_path}/b/blazar-lite.db"


def test_replace_keeps_an_explicit_database_url(tmp_path: Path) -> None:
    loaded = load_settings(environ={}, data_dir=str(tmp_path), database_url="sqlite:///elsewhere.db")
    assert loaded.replace(data_dir=str(tmp_path / "b")).database_url == "sqlite:///elsewhere.db"


def test_config_sample_command_prints_the_sample() -> None:
    result = CliRunner().invoke(main, ["config-sample"])
    assert result.exit_code == 0
    assert result.output == config_sample()
