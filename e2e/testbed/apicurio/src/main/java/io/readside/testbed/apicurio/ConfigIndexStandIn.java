package io.readside.testbed.apicurio;

import java.util.List;

import javax.enterprise.inject.Produces;
import javax.inject.Singleton;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;

/**
 * Stands in for the Quarkus extension apicurio-common-app-components-config-index,
 * whose build-time half (the -deployment artifact) Maven Central does not serve:
 * that extension gives the registry the list of its dynamic (runtime-settable)
 * properties. The test bed sets none, so the list is empty; the properties'
 * values still come from the configuration.
 */
public class ConfigIndexStandIn {
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigProperties() {
        return new DynamicConfigPropertyList(List.of());
    }
}
