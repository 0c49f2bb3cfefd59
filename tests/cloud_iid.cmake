# The cloud-iid attestor (issue 14; policy/attestors/cloud_iid.h): GCP
# tokens, AWS documents and OIDC tokens signed at test time, each refusal
# in a real join transaction, and the JWKS URL fetched in prepare only
# (python3 -m http.server on 127.0.0.1).
fleet_test(test_cloud_iid unit unit/test_cloud_iid.c LIBS fleetattestors_cloud fleet_x509_mint
           fleet_store_location)
fleet_pg_twin(test_cloud_iid) # the same on PostgreSQL (tests/CMakeLists.txt)
