import { getTestInfrastructure } from '@policygen/testing-infra';
import { describeMessagingContract } from '../messaging-contract';
import { createKafkaMessaging } from './kafka-messaging';

describeMessagingContract('Kafka adapter against a real broker', () =>
  createKafkaMessaging({
    brokers: getTestInfrastructure().kafkaBrokers,
    clientId: 'messaging-it',
    log: () => undefined,
  }),
);
