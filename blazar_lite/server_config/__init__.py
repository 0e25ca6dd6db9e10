"""Server configuration stored in the database (GET/PUT/PATCH /v1/config), as LXD's server config."""
